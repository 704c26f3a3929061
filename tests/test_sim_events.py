"""sim.events: the event loop keeps commlab.net.clock's rules (one message at a time per port)."""
import numpy as np
import pytest

from commlab.net.clock import Network, replay
from commlab.net.link import LinkModel
from commlab.sim.events import Dag


def test_an_out_port_sends_one_message_at_a_time():
    dag = Dag()
    ids = dag.add(1, [2, 4, 6], [1.0, 2.0, 3.0])
    depart, arrive, _ = dag.run()
    assert list(depart[ids]) == [0, 1, 3] and list(arrive[ids]) == [1, 3, 6]


def test_an_in_port_takes_one_message_at_a_time():
    dag = Dag()
    ids = dag.add([1, 3, 5], 2, 1.0)
    depart, arrive, _ = dag.run()
    assert list(depart[ids]) == [0, 0, 0] and list(arrive[ids]) == [1, 2, 3]


def test_dependencies_earliest_and_joins():
    dag = Dag()
    a = dag.add(1, 2, 1.0)
    b = dag.add(3, 4, 2.0, earliest=5.0)
    j = dag.join([int(a[()]), int(b[()])])
    c = dag.add(5, 6, 1.0, earliest=1.0)
    dag.after(j, c)
    depart, arrive, events = dag.run()
    assert arrive[a] == 1 and depart[b] == 5 and arrive[b] == 7
    assert arrive[j] == 7 and depart[c] == 7 and arrive[c] == 8
    assert dag.count == 4 and dag.joins == 1 and events >= 4


def test_a_cycle_is_reported():
    dag = Dag()
    a, b = dag.add(1, 2, 1.0), dag.add(2, 1, 1.0)
    dag.after(a, b)
    dag.after(b, a)
    with pytest.raises(ValueError, match="deadlocks"):
        dag.run()


def test_empty():
    d, a, e = Dag().run()
    assert len(d) == len(a) == e == 0


@pytest.mark.parametrize("p", [2, 5])
def test_gather_and_scatter_equal_the_clock(p):
    """Workers 1..p-1 send n bytes to rank 0, which sends the sum back: the loop and
    commlab.net.clock.replay give the same end."""
    link, n = LinkModel(1e-5, 1e-9), 1e6
    programs = [[("recv", w, 0, n) for w in range(1, p)] + [("send", w, 0, n) for w in range(1, p)]]
    programs += [[("send", 0, 0, n), ("recv", 0, 0, n)] for _ in range(1, p)]
    clock_end = max(replay(programs, Network(link)))
    dag = Dag()  # rank r: out-port 1 + 2r, in-port 2 + 2r
    up = dag.add(1 + 2 * np.arange(1, p), 2, link.time(n))
    down = dag.add(1, 2 + 2 * np.arange(1, p), link.time(n))
    dag.after(dag.join(up), down)
    _, arrive, _ = dag.run()
    assert arrive.max() == pytest.approx(clock_end, rel=1e-12)
