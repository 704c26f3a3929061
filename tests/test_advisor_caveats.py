"""commlab.advisor.caveats: a compressed row's gain within the compression model's error on a
measured grid says "measure first", the error being what sim.grace computes; a measured profile
that does not fit the GPU is refused with the ways out."""
import pytest

from commlab import sim
from commlab.advisor import advise
from commlab.advisor.caveats import COMPRESSION_ERROR
from commlab.sim import grace


@pytest.fixture(scope="module")
def ranked():
    return {"100GbIB": advise("resnet50", sim.Cluster(8, 4, inter="100GbIB"), target=1000)}


def test_a_compressed_rows_gain_within_the_models_error_says_measure_first(ranked):
    assert COMPRESSION_ERROR == round(grace.summary(grace.compare()).loc["all", "speedup_error"], 3)
    ranked = ranked["100GbIB"]
    compressed = ranked[ranked["compress"].notna()]
    assert (compressed["model_error"] == COMPRESSION_ERROR).all()
    assert (ranked[ranked["compress"].isna()]["model_error"] == 0).all()
    plain = {(r.sync, r.arch, r.schedule): r.time_s for r in ranked.itertuples() if r.compress is None}
    for r in compressed.itertuples():
        gain = plain[(r.sync, r.arch, r.schedule)] / r.time_s - 1
        assert ("measure first" in r.reasoning) == (abs(gain) < COMPRESSION_ERROR), r.reasoning


def test_a_measured_profile_that_does_not_fit_the_gpu_is_refused(tmp_path):
    import dataclasses

    prof = sim.builtin("resnet50")
    big = dataclasses.replace(prof, about={**prof.about, "memory": {"parameters": 100e6, "gradients": 100e6,
                                                                     "activations": 40e9}})
    with pytest.raises(ValueError, match=r"each data-parallel worker needs 40\.3 GB at batch 64 .* more than a "
                                         r"GPU's 32 GB, and even ZeRO stage 3 over 8 GPUs holds 40\.0 GB per GPU"):
        advise(big, sim.Cluster(2, 4), memory_gb=32)
    assert len(advise(big, sim.Cluster(2, 4), memory_gb=80)) > 0


def test_a_worker_that_does_not_fit_gets_the_zero_stages_that_do():
    import dataclasses

    prof = sim.builtin("resnet50")
    state = dataclasses.replace(prof, about={**prof.about, "memory": {"parameters": 8e9, "gradients": 8e9,
                                                                       "activations": 4e9}})
    # 8 + 8 + 8 + 4 = 28 GB whole; stage 1: 8 + 8 + 1 + 4 = 21; stage 2: 8 + 1 + 1 + 4 = 14; stage 3: 1 + 1 + 1 + 4 = 7
    table = advise(state, sim.Cluster(2, 4), memory_gb=16)
    assert list(table.arch) == ["zero(stage=2)", "zero(stage=3)"] and set(table.sync) == {"bsp"}
    assert "14 GB per GPU" in table.reasoning.iloc[0] and "7 GB per GPU" in table.reasoning.iloc[1]
    assert (table.penalty == 1).all() and "data parallelism" in table.attrs["left_out"]
    plain = sim.iteration(prof, sim.Cluster(2, 4), arch="allreduce")  # stage 2 moves an all-reduce's bytes
    assert table.iteration_s.iloc[0] == pytest.approx(plain.time, rel=1e-12)
    assert table.iteration_s.iloc[1] > plain.time  # stage 3 gathers the parameters again: 1.5 x the bytes
    assert len(advise(state, sim.Cluster(2, 4), memory_gb=32)) > 2  # data parallelism fits: the usual rows
