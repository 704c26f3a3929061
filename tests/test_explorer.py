"""An explorer shows one figure and redraws that figure in place (commlab/chapters/explorer.py).

The figures are counted in a live kernel, as JupyterLab receives them: the messages a widget
cell sends on IOPub, and those a change of one of its controls sends.
"""
import os
import queue

import matplotlib
import matplotlib.pyplot as plt
import pytest

from commlab.chapters import explorer

matplotlib.use("Agg")


def test_figure_of_accepts_a_figure_an_axes_and_axes():
    fig, axes = plt.subplots(1, 2)
    assert explorer.figure_of(fig) is fig
    assert explorer.figure_of(axes[0]) is fig
    assert explorer.figure_of(list(axes)) is fig
    plt.close(fig)
    with pytest.raises(TypeError, match="must return a Figure, an Axes or a sequence of Axes, got int"):
        explorer.figure_of(3)


def test_render_closes_the_figure_and_turns_a_refused_setting_into_its_message():
    def draw(n):
        if n > 2:
            raise ValueError(f"a hypercube needs a power of two nodes, got {n}")
        return plt.subplots()[1]

    before = len(plt.get_fignums())
    assert isinstance(explorer.render(draw, {"n": 2}), plt.Figure)
    assert len(plt.get_fignums()) == before  # closed: the cell's end does not show it again
    shown = explorer.render(draw, {"n": 12})
    assert repr(shown) == "a hypercube needs a power of two nodes, got 12"
    with pytest.raises(ZeroDivisionError):
        explorer.render(lambda n: 1 / n, {"n": 0})


# ----- in a live kernel ---------------------------------------------------------------------
CELL = """
from commlab.chapters import ch03 as chapter
chapter.ps_explorer(nbytes=102.4e6, link="10GbE", servers=8, max_workers=64);
"""


def messages(kc, parent: str, timeout: float = 60.0) -> list[dict]:
    """IOPub messages for the request ``parent`` until the kernel is idle again."""
    out = []
    while True:
        try:
            msg = kc.get_iopub_msg(timeout=timeout)
        except queue.Empty:
            raise AssertionError(f"the kernel went quiet for {timeout} s before it was idle") from None
        if msg["parent_header"].get("msg_id") != parent:
            continue
        out.append(msg)
        if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
            return out


def figures(msgs, kind: str) -> int:
    return sum(m["msg_type"] == kind and "image/png" in m["content"]["data"] for m in msgs)


@pytest.fixture(scope="module")
def kernel(tmp_path_factory):
    manager = pytest.importorskip("jupyter_client.manager")
    env = {k: v for k, v in os.environ.items() if k != "MPLBACKEND"}  # the notebook's inline backend
    # IPC sockets in a folder of its own: TCP ports picked while other kernels start can collide
    km = manager.KernelManager(kernel_name="python3", transport="ipc",
                               ip=str(tmp_path_factory.mktemp("kernel") / "ipc"))
    km.start_kernel(env=env)
    kc = km.client()
    kc.start_channels()
    try:
        kc.wait_for_ready(timeout=60)
        yield kc
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


def test_a_widget_cell_shows_one_figure_and_a_control_redraws_it_in_place(kernel):
    kc = kernel
    msgs = messages(kc, kc.execute(CELL))
    assert not [m for m in msgs if m["msg_type"] == "error"], [m["content"] for m in msgs if m["msg_type"] == "error"]
    assert figures(msgs, "display_data") == 1  # the figure, once; interactive() used to draw it twice
    shown = [m for m in msgs if m["msg_type"] == "display_data" and "image/png" in m["content"]["data"]][0]
    display_id = shown["content"]["transient"]["display_id"]
    views = [m for m in msgs if m["msg_type"] == "display_data"
             and "application/vnd.jupyter.widget-view+json" in m["content"]["data"]]
    assert len(views) == 1  # the controls, once

    # move the 'servers S' slider as a browser would: a comm message updating its value
    opened = {m["content"]["comm_id"]: m["content"]["data"]["state"] for m in msgs if m["msg_type"] == "comm_open"}
    slider = next(cid for cid, state in opened.items() if state.get("description") == "servers S")
    update = kc.session.msg("comm_msg", {"comm_id": slider, "data": {"method": "update", "state": {"value": 16},
                                                                     "buffer_paths": []}})
    kc.shell_channel.send(update)
    msgs = messages(kc, update["header"]["msg_id"])
    assert figures(msgs, "display_data") == 0  # no second figure...
    redrawn = [m for m in msgs if m["msg_type"] == "update_display_data"]
    assert len(redrawn) == 1 and "image/png" in redrawn[0]["content"]["data"]  # ...the first one, redrawn
    assert redrawn[0]["content"]["transient"]["display_id"] == display_id
