"""The synchronization registry and the synchronizers' common contract."""
import pytest
import torch

from commlab import sync
from commlab.sync import SYNCS
from commlab.sync.bsp import BSP


def test_registry():
    assert SYNCS.names() == sorted(["bsp", "asp", "ssp", "backup", "round_robin", "hogwild", "local_sgd",
                                    "post_local_sgd", "fedavg", "dynamic_batch",  # and commlab.decentral's:
                                    "dpsgd", "dcd_psgd", "ecd_psgd", "choco", "naive_gossip", "adpsgd"])
    assert isinstance(sync.get(), BSP) and isinstance(sync.get("BSP"), BSP)
    assert repr(sync.get("bsp")) == "BSP()" and BSP.name == "bsp"
    assert repr(sync.get("ssp(staleness=3)")) == "SSP(staleness=3)"
    assert repr(sync.get("local-sgd(period=4)")) == "LocalSGD(period=4)"


def test_unknown_and_bad_arguments():
    with pytest.raises(ValueError, match=r"unknown synchronization 'bulk'; valid: adpsgd, asp, backup, bsp, choco, dcd_psgd, dpsgd, dynamic_batch"):
        sync.get("bulk")
    with pytest.raises(ValueError, match=r"bad arguments for synchronization 'bsp\(1\)'"):
        sync.get("bsp(1)")
    with pytest.raises(ValueError, match="cannot read spec"):
        sync.get("bsp(")


def test_every_rule_is_a_synchronizer_and_says_whether_it_needs_a_server():
    from commlab.arch.ps_policy import BSPPolicy
    from commlab.sync import server_policies as policies
    from commlab.sync.base import Synchronizer

    for name in SYNCS.names():
        assert isinstance(sync.get(name), Synchronizer), name
    want = {"asp": policies.ASPPolicy, "ssp": policies.SSPPolicy, "backup": policies.BackupPolicy,
            "round_robin": policies.RoundRobinPolicy}
    for name, cls in want.items():
        rule = sync.get(name)
        assert rule.needs == {"server"} and type(rule.server_policy()) is cls
    for name in ("bsp", "dynamic_batch"):
        assert "server" not in sync.get(name).needs and type(sync.get(name).server_policy()) is BSPPolicy
    for name in ("local_sgd", "post_local_sgd", "fedavg", "hogwild"):  # they average models, or share memory
        assert sync.get(name).server_policy() is None
    assert sync.get("ssp(staleness=3)").server_policy().staleness == 3
