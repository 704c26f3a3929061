"""commlab.infra.elastic: a run that loses a rank resumes from its checkpoint on the others and
ends with the uninterrupted run's losses; the failure names the rank; nothing is left behind."""
import os

import pytest

from commlab.infra import elastic

STEPS, EVERY = 30, 8


@pytest.fixture(scope="module")
def clean(tmp_path_factory):
    d = tmp_path_factory.mktemp("clean")
    return elastic.run(3, STEPS, EVERY, runtime="threads", directory=str(d))


def test_threads_resume_reaches_the_same_losses(clean, tmp_path):
    out = elastic.run(3, STEPS, EVERY, fail_rank=1, fail_step=19, runtime="threads", directory=str(tmp_path))
    assert out["losses"] == pytest.approx(clean["losses"], abs=1e-5)
    (e,) = out["events"]
    assert (e["failed_rank"], e["resumed_from"], e["lost_steps"], e["world_after"]) == (1, 16, 3, 2)
    assert clean["losses"][-1] < 0.75 * clean["losses"][0]  # it trains
    assert os.listdir(tmp_path) == []  # no checkpoint or temporary file left behind


def test_gloo_crash_is_named_and_resumed(clean, tmp_path):
    out = elastic.run(3, STEPS, EVERY, fail_rank=2, fail_step=9, runtime="gloo", directory=str(tmp_path))
    (e,) = out["events"]
    assert e["failed_rank"] == 2 and "exited" in e["error"] and e["resumed_from"] == 8
    assert e["detected_after_s"] < 15
    assert out["losses"] == pytest.approx(clean["losses"], abs=1e-5)


def test_refusals(tmp_path):
    with pytest.raises(ValueError, match="checkpoint interval every=0 must be an integer number of steps > 0"):
        elastic.run(2, 10, 0, directory=str(tmp_path))
    with pytest.raises(ValueError, match="fail_rank=3; valid: 0..2"):
        elastic.run(3, 10, 2, fail_rank=3, fail_step=1, directory=str(tmp_path))
    with pytest.raises(ValueError, match="fail_step=10; valid: 0..9"):
        elastic.run(3, 10, 2, fail_rank=0, fail_step=10, directory=str(tmp_path))
