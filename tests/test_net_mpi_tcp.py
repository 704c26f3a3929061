"""commlab.net.mpi_tcp: the literature's measurements of MPI over TCP, each within what its wire
can carry, set beside the nominal TCP link at the same line rate."""
import pytest

from commlab.net import mpi_tcp
from commlab.net.protocols import TCP_PAYLOAD, tcp


def test_no_measurement_beats_its_wire():
    for r in mpi_tcp.MEASURED:   # jumbo frames may leave more than 1500-byte frames' 94.1%, never more than the line
        assert 0 < r.gbits <= r.line_gbits, r
        assert r.setting and r.source


def test_table_sets_each_beside_the_nominal_link():
    t = mpi_tcp.table()
    assert len(t) == len(mpi_tcp.MEASURED) and set(t.line_gbits) == {1, 10, 25, 100}
    assert t.of_line.tolist() == pytest.approx([r.gbits / r.line_gbits for r in mpi_tcp.MEASURED])
    assert (t.model_gbits == [8 * tcp(g).gbytes_per_s for g in t.line_gbits]).all()
    # what the module says: 1GbE and a tuned 10GbE host run at the wire; faster links at the host's rate
    assert t[t.line_gbits == 1].of_line.min() > 0.85
    assert t[t.line_gbits == 10].measured_gbits.max() > 0.9 * 10 * TCP_PAYLOAD
    assert t[t.line_gbits >= 25].of_line.max() < 0.5
