"""commlab.classroom.limits: in an IPython shell an exercise's answer cell and its check are
stopped at the time limit while other cells are not; the verdict carries the check's message,
says when the answer cell raised or was stopped, and passes the reference solution; an
exercise's variable is deleted before its cell; the otter plugin puts the limit before every
answer cell and nowhere else."""
import signal

import nbformat
import pytest

from commlab_instructor import SOLUTIONS
from commlab.classroom import limits
from commlab.classroom.limits import ExerciseTimeLimit, NotSolved, exercise, verdict


@pytest.fixture
def shell():
    from IPython.core.interactiveshell import InteractiveShell

    before = signal.getsignal(signal.SIGALRM)
    sh = InteractiveShell.instance()
    yield sh
    for event, fn in (("pre_run_cell", limits._arm), ("post_run_cell", limits._disarm)):
        if fn in sh.events.callbacks[event]:
            sh.events.unregister(event, fn)
    InteractiveShell.clear_instance()
    signal.signal(signal.SIGALRM, before)
    limits._STATE.update(exercise=None, left=0, armed=False, stopped=None, raised=None)


def test_an_answer_cell_that_loops_is_stopped_and_the_notebook_goes_on(shell):
    shell.run_cell("from commlab.classroom.limits import exercise\nexercise('ch01_speedup', 0.3)")
    looped = shell.run_cell("while True:\n    pass")
    assert isinstance(looped.error_in_exec, limits.ExerciseTimeout)
    with pytest.raises(NotSolved, match=r"^the answer cell was stopped after 0.3 s, the time limit"):
        verdict(shell.user_ns, "ch01", "check_speedup", "answer2")
    shell.run_cell("pass")  # the check's cell (the second limited one)
    after = shell.run_cell("import time\ntime.sleep(0.5)\nslept = True")  # the book's cells: no limit
    assert after.error_in_exec is None and shell.user_ns["slept"]


def test_a_raising_answer_cell_is_named_in_the_message(shell):
    shell.run_cell("from commlab.classroom.limits import exercise\nexercise('ch01_speedup', 5)")
    shell.run_cell("answer2 = 1 / 0")
    with pytest.raises(NotSolved, match=r"^the answer cell raised ZeroDivisionError: division by zero$"):
        verdict(shell.user_ns, "ch01", "check_speedup", "answer2")
    shell.run_cell("exercise('ch01_max_workers', 5)")
    shell.run_cell("answer3 = 3\nraise RuntimeError('late')")  # defined, then raised: the check decides
    with pytest.raises(NotSolved, match=r"raised RuntimeError: late; the check said: largest N at 50% efficiency: not yet"):
        verdict(shell.user_ns, "ch01", "check_max_workers", "answer3")


def test_an_earlier_exercises_value_is_never_graded(shell):
    """Chapter 06's first two exercises both assign ``answer``: before the second's cell runs its
    variable is deleted, so a second cell that fails (or is missing) is not graded on the first's."""
    shell.run_cell("from commlab.classroom.limits import exercise\nexercise('ch06_qsgd_bytes', 5, 'answer')")
    shell.run_cell("answer = 2500")
    shell.run_cell("pass")
    shell.run_cell("exercise('ch06_qsgd_bound', 5, 'answer')")
    assert "answer" not in shell.user_ns
    shell.run_cell("answer = 1 / 0")
    with pytest.raises(NotSolved, match=r"^the answer cell raised ZeroDivisionError"):
        verdict(shell.user_ns, "ch06", "check_qsgd_bound", "answer")


def test_verdict_passes_the_solution_and_carries_the_checks_message():
    verdict({"answer1": SOLUTIONS["ch01"]["check_c2c_ratio"]()}, "ch01", "check_c2c_ratio", "answer1")
    with pytest.raises(NotSolved, match=r"^C2C ratio of BERT-Large: not answered yet\. f\(N\) = 2\(N-1\)/N for a ring\.$"):
        verdict({"answer1": None}, "ch01", "check_c2c_ratio", "answer1")
    with pytest.raises(NotSolved, match="not yet: 0.5 is not within 2% of the expected value"):
        verdict({"answer1": 0.5}, "ch01", "check_c2c_ratio", "answer1")
    with pytest.raises(NotSolved, match="^answer1 is not defined: the exercise's cell did not run to its end$"):
        verdict({}, "ch01", "check_c2c_ratio", "answer1")


def test_exercise_needs_a_kernel_and_a_positive_limit():
    with pytest.raises(ValueError, match="seconds must be > 0, got 0"):
        exercise("ch01_speedup", 0)
    with pytest.raises(RuntimeError, match="runs in an IPython kernel"):
        exercise("ch01_speedup", 1)


def test_plugin_puts_the_limit_before_each_answer_cell_only():
    code = nbformat.v4.new_code_cell
    answer = code("answer1 = 2")
    answer.metadata["otter"] = {"tests": ["ch01_c2c_ratio"]}
    nb = nbformat.v4.new_notebook(cells=[code("x = 1"), answer, nbformat.v4.new_markdown_cell("text")])
    out = ExerciseTimeLimit("sub.ipynb", {}, {"seconds": 7, "variables": {"ch01_c2c_ratio": "answer1"}}
                            ).before_execution(nb)
    assert [c.source for c in out.cells] == [
        "x = 1", "from commlab.classroom.limits import exercise\nexercise('ch01_c2c_ratio', 7.0, 'answer1')",
        "answer1 = 2", "text"]
