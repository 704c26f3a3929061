"""History: the data frame view, summaries, bit-for-bit comparison and plotting."""
import copy
import math

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

from commlab.history import DETERMINISTIC, History, clock_gaps  # noqa: E402

NAN = math.nan


def _history():
    return History(
        steps=[1, 2, 3, 4],
        loss=[2.0, 1.5, 1.2, 1.0],
        test_accuracy=[NAN, 0.5, NAN, 0.75],
        test_loss=[NAN, 1.4, NAN, 1.1],
        sim_time=[0.1, 0.2, 0.3, 0.4],
        wall_time=[0.01, 0.02, 0.035, 0.05],
        bytes_sent=[[10, 20], [10, 30], [0, 0], [5, 5]],
        bytes_recv=[[20, 10], [30, 10], [0, 0], [5, 5]],
        server_bytes_sent=[60, 60],
        server_bytes_recv=[70, 70],
        samples=[64, 64, 64, 64],
        staleness=[[0, 1], [0, 2], [1, None], [0, 0]],
        dropped=[0, 0, 1, 0],
        worker_time=[[0.1, 0.09], [0.2, 0.15], [0.3, 0.3], [0.4, 0.35]],
        consensus=[0.5, 0.25, 0.125, 0.0625],
        applied=[[0, 1, 0], [1, 1, 1], [0, 2, 0]],
        config={"seed": 0},
    )


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def test_len():
    assert len(_history()) == 4 and len(History()) == 0


def test_to_dataframe_columns_and_cumulative_bytes():
    df = _history().to_dataframe()
    assert df.index.name == "step" and list(df.index) == [1, 2, 3, 4]
    assert list(df.columns) == ["loss", "test_accuracy", "test_loss", "sim_time", "wall_time",
                                "bytes_sent_mean", "bytes_sent_max", "cum_bytes_sent_mean", "consensus",
                                "cum_samples", "staleness_mean"]
    assert list(df["consensus"]) == [0.5, 0.25, 0.125, 0.0625]
    assert list(df["cum_samples"]) == [64, 128, 192, 256]
    assert list(df["staleness_mean"]) == [0.5, 1.0, 1.0, 0.0]  # a dropped gradient (None) is left out
    assert list(History(steps=[1], loss=[1.0], test_accuracy=[0.5], test_loss=[1.0], sim_time=[0.1],
                        wall_time=[0.1], bytes_sent=[[1]], bytes_recv=[[1]]).to_dataframe().columns)[-1] \
        == "cum_bytes_sent_mean"  # no samples or staleness recorded: no such columns
    assert list(df["bytes_sent_mean"]) == [15, 20, 0, 5]
    assert list(df["bytes_sent_max"]) == [20, 30, 0, 5]
    assert list(df["cum_bytes_sent_mean"]) == [15, 35, 35, 40]
    assert list(df["loss"]) == [2.0, 1.5, 1.2, 1.0]
    assert df["test_accuracy"].isna().tolist() == [True, False, True, False]


def test_final_accuracy():
    assert _history().final_accuracy == 0.75
    h = _history()
    h.test_accuracy = [NAN, 0.5, NAN, NAN]
    assert h.final_accuracy == 0.5
    h.test_accuracy = [NAN] * 4
    assert math.isnan(h.final_accuracy)
    assert math.isnan(History().final_accuracy)


def test_total_bytes_sent():
    assert _history().total_bytes_sent() == [25, 55]
    assert History().total_bytes_sent() == []


def test_same_as_treats_nan_as_equal():
    a, b = _history(), _history()
    a.sim_time = b.sim_time = [NAN] * 4
    assert a.same_as(b) and b.same_as(a)
    assert a.same_as(a)


def test_same_as_ignores_wall_time_and_config():
    a, b = _history(), _history()
    b.wall_time = [9.0, 9.1, 9.2, 9.3]
    b.config = {"seed": 1}
    assert "wall_time" not in DETERMINISTIC
    assert a.same_as(b)


@pytest.mark.parametrize("column", DETERMINISTIC)
def test_same_as_detects_any_difference(column):
    a = _history()
    b = copy.deepcopy(a)
    col = getattr(b, column)
    if isinstance(col[0], list):
        col[0] = [col[0][0] + 1] + col[0][1:]
    else:
        col[0] = 0.123 if math.isnan(col[0]) else col[0] + 1e-12 * max(1.0, abs(col[0]))
    assert not a.same_as(b)
    # NaN against a number differs
    c = copy.deepcopy(a)
    if not isinstance(getattr(c, column)[1], list):
        getattr(c, column)[1] = NAN if not math.isnan(getattr(c, column)[1]) else 0.0
        assert not a.same_as(c)


def test_same_as_detects_different_lengths():
    a, b = _history(), _history()
    b.steps, b.loss = b.steps[:3], b.loss[:3]
    assert not a.same_as(b)
    c = _history()
    c.loss = c.loss[:3]  # same steps, one column shorter
    assert not a.same_as(c)


@pytest.mark.parametrize("x,label", [("step", "step"), ("sim_time", "simulated time (s)"),
                                     ("wall_time", "wall time (s)"), ("bytes", "bytes sent per worker")])
def test_plot_returns_axes(x, label):
    ax = _history().plot(x=x, y="loss", label="run")
    assert isinstance(ax, matplotlib.axes.Axes)
    assert ax.get_xlabel() == label and ax.get_ylabel() == "loss"
    (line,) = ax.get_lines()
    assert line.get_label() == "run" and len(line.get_xdata()) == 4
    if x == "bytes":
        assert list(line.get_xdata()) == [15, 35, 35, 40]


def test_plot_drops_nan_rows_and_uses_given_axes():
    fig, ax = plt.subplots()
    out = _history().plot(x="step", y="test_accuracy", ax=ax)
    assert out is ax
    (line,) = ax.get_lines()
    assert list(line.get_xdata()) == [2, 4] and list(line.get_ydata()) == [0.5, 0.75]


@pytest.mark.parametrize("kw,what", [({"x": "nonsense"}, "x"), ({"y": "nonsense"}, "y"),
                                     ({"x": "cum_bytes"}, "x")])
def test_plot_bad_column(kw, what):
    with pytest.raises(ValueError, match=rf"unknown {what} column 'nonsense'|unknown {what} column 'cum_bytes'"):
        _history().plot(**kw)


def test_clock_gaps_by_hand():
    log = [(0, 1, 0), (0, 2, 1), (1, 1, 2), (0, 3, 1), (1, 2, 1), (1, 3, 0)]
    assert clock_gaps(log, 2).tolist() == [1, 2, 1, 2, 1, 0]
    assert clock_gaps(log, 3).tolist() == [1, 2, 2, 3, 3, 3]            # worker 2 never pushed
    assert clock_gaps([], 4).tolist() == []


# ----- check_health: when a run has diverged ---------------------------------------------------
def test_check_health_names_rule_step_and_worker():
    from commlab.history import Diverged, check_health

    check_health("bsp", 3, 1, 2.3, [torch.ones(3), torch.zeros(0)])  # healthy: nothing
    with pytest.raises(Diverged, match=r"^asp diverged at step 7 on worker 2: loss 20000 \(above 10000\); lower lr$"):
        check_health("asp", 7, 2, 2e4)
    with pytest.raises(Diverged, match="worker 1: loss inf"):
        check_health("bsp", 1, 1, math.inf)
    with pytest.raises(Diverged, match="worker 0: loss nan; lower lr"):
        check_health("bsp", 1, 0, math.nan)
    bad = torch.ones(4, dtype=torch.bfloat16)
    bad[2] = float("inf")
    with pytest.raises(Diverged, match="a NaN or an Inf in its model"):
        check_health("local_sgd", 5, 3, 1.0, [torch.ones(2), bad])


def test_check_health_a_worker_that_did_not_train_may_have_no_loss():
    from commlab.history import Diverged, check_health

    check_health("fedavg", 2, 4, math.nan, [torch.ones(3)], trained=False)
    with pytest.raises(Diverged, match=r"a NaN or an Inf in its model \(loss nan\)"):
        check_health("fedavg", 2, 4, math.nan, [torch.tensor([math.nan])], trained=False)


def test_diverged_survives_pickling_and_its_text():
    import pickle

    from commlab.history import Diverged

    e = Diverged("ssp", 12, 3, "loss inf; lower lr")
    back = pickle.loads(pickle.dumps(e))
    again = Diverged.from_message(f"rank 3 failed: Diverged: {e}")
    assert (back.rule, back.step, back.worker, str(back)) == (again.rule, again.step, again.worker, str(e))
