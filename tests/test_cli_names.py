"""commlab.cli.names: every --help epilog lists the names the registries define, and a name that
is not one of them ends with status 2 and the valid choices."""
import argparse

import pytest

from commlab import sim, sync
from commlab.cli.names import check_name, epilog, names


def test_the_names_come_from_the_registries():
    offered = names()
    assert offered["sync"] == sync.SYNCS.names() and offered["method"] == list(sim.METHODS)
    assert "<compressor>+ef" in offered["compress"] and "resnet50" in offered["advised model"]
    text = epilog(("sync", "method"))
    assert text.splitlines() == ["names each dimension offers:", f"  sync: {', '.join(offered['sync'])}",
                                 f"  method: {', '.join(offered['method'])}"]


def test_an_unknown_name_is_refused_with_the_valid_ones(capsys):
    p = argparse.ArgumentParser(prog="x")
    check_name(p, "--model", "mlp", ["mlp", "cnn"])  # a valid name: nothing said
    with pytest.raises(SystemExit) as e:
        check_name(p, "--model", "mlpp", ["mlp", "cnn"])
    assert e.value.code == 2 and "--model 'mlpp' is unknown; valid: mlp, cnn" in capsys.readouterr().err
