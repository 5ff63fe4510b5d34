"""Staged training (stumplib.book.studies.staged): the exact stop at the certified scale against GD
replayed by hand, continued runs, diverged runs, the cached runs and their errors, and what
training past the stop changes."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from stumplib.stump.corpus_grad import corpus_grad
from stumplib.book.studies.frozen import sq_errors
from stumplib.book.studies.staged import stage_marks, train_staged
from stumplib.stump.tasks import sample_tasks
from stumplib.book.studies.transfer import population_path, step_size_limit
from stumplib.stump import Prior


def test_stage_marks():
    np.testing.assert_allclose(stage_marks(2.5, 10.0, 45.0), [5.0, 10.0, 20.0, 40.0, 45.0])


def test_staged_gd_stops_at_the_first_step_past_beta_star():
    beta0, bstop = 3.0, 6.5
    r = train_staged(32, 32, [0, 1], beta0=beta0, beta_stop=bstop, beta_end=13.0, device="cpu")
    stop_beta, stop_b = r.at_stop()
    assert np.all(r.stop_step > 0) and np.all(stop_beta >= bstop)
    # replay GD by hand with the same schedule and the general corpus gradient (not the trainer's
    # sorted kernel): one step earlier, beta was still below beta*; every mark at the same step
    corp = [sample_tasks(32, 32, Prior(0.2, 0.8), seed=s, device="cpu") for s in (0, 1)]
    c0 = float(population_path([beta0])["c"][0])
    marks = r.marks
    lim = step_size_limit(np.concatenate([[beta0], marks]))
    np.testing.assert_allclose(r.lr_marks, 0.3 * lim[1:], rtol=1e-15)
    for k in range(2):
        beta, b = torch.tensor([beta0]), torch.tensor([beta0 * c0])
        lr, j, prev, at = 0.3 * lim[0], 0, beta0, []
        for t in range(1, int(r.stop_step[k]) + 1):
            tau, x, y = corp[k]
            _, gb, gbb = corpus_grad(x[None], y[None], tau[None], beta, b)
            prev = float(beta)
            beta, b = beta - lr * gb, b - lr * gbb
            while j < marks.size and float(beta) >= marks[j]:
                lr, j = 0.3 * lim[j + 1], j + 1
                at.append(t)
        assert prev < bstop <= float(beta)
        assert float(beta) == pytest.approx(stop_beta[k], rel=1e-12)
        assert float(b) == pytest.approx(stop_b[k], rel=1e-12)
        assert at == r.mark_step[k, :len(at)].tolist() and at[-1] == r.stop_step[k]
        # the log-spaced records: the first step past each scale, up to beta_end
        ls = r.log_step[k]
        assert np.all(np.diff(ls) > 0) and np.all(r.log_beta[k] >= r.log_scales)
    assert np.all(r.final_beta >= 13.0) and not r.diverged.any()
    # the step cap freezes a run where it stands
    short = train_staged(32, 32, [0], beta0=beta0, beta_stop=bstop, beta_end=13.0, steps=3)
    assert short.stop_step[0] == -1 and short.final_step == 3
    np.testing.assert_array_equal(short.at_stop()[0], short.final_beta)


def test_continued_runs_sharpen_past_the_stop():
    r = train_staged(64, 64, [0], beta0=4.0, beta_stop=8.0, beta_end=32.0)
    e_stop = sq_errors(*r.at_stop(), 2048, n_ctx=40).mean() ** 0.5
    e_end = sq_errors(*r.at_end(), 2048, n_ctx=40).mean() ** 0.5
    assert e_end < 0.5 * e_stop  # about 1/beta: a factor 4 in scale


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device on this machine")
def test_staged_gd_on_cuda_matches_cpu():
    kw = dict(beta0=3.0, beta_stop=6.5, beta_end=13.0)
    cpu = train_staged(32, 32, [0, 1], device="cpu", **kw)
    gpu = train_staged(32, 32, [0, 1], device="cuda", **kw)
    for k in ("mark_step", "stop_step", "log_step", "final_step"):
        np.testing.assert_array_equal(getattr(gpu, k), getattr(cpu, k))
    for k in ("mark_beta", "mark_b", "log_beta", "log_b", "final_beta", "final_b"):
        np.testing.assert_allclose(getattr(gpu, k), getattr(cpu, k), rtol=1e-10)


def test_a_diverged_run_is_flagged_and_the_others_carry_on():
    """A 4-task corpus on which the population-based step oscillates away (beta turns negative)."""
    r = train_staged(4, 128, [7403, 7400], beta0=128.0, beta_stop=256.0, beta_end=256.0, max_steps=20_000)
    assert r.diverged.tolist() == [True, False] and r.kept.tolist() == [False, True]
    assert r.stop_step[0] == -1 and np.isnan(r.final_beta[0]) and np.isnan(r.final_b[0])
    # every per-run result leaves the diverged run out
    assert r.at_stop()[0].shape == r.at_end()[0].shape == (1,)
    alone = train_staged(4, 128, [7400], beta0=128.0, beta_stop=256.0, beta_end=256.0, max_steps=20_000)
    assert alone.stop_step[0] == r.stop_step[1] > 0
    assert alone.at_stop()[0][0] == pytest.approx(r.at_stop()[0][0], rel=1e-12)
    assert alone.at_end()[1][0] == pytest.approx(r.at_end()[1][0], rel=1e-12)


def test_staged_runs_come_back_from_the_cache_as_they_were(tmp_path, monkeypatch, book_cache):
    """Trained, cached, reloaded: the same :class:`StagedRuns`; stop and end errors keep only the
    runs that did not diverge."""
    from stumplib.book.studies.staged import StagedRuns, end_errors, stop_errors, train_to_certified_stop

    monkeypatch.setenv("STUMPBOOK_RESULTS", str(tmp_path))
    kw = dict(continue_to=[8.0], seed=3)
    a = train_to_certified_stop([(16, 16)], [4.0], [2], **kw)[0]
    b = train_to_certified_stop([(16, 16)], [4.0], [2], **kw)[0]  # reloaded
    assert isinstance(b, StagedRuns) and len(list(tmp_path.glob("staged_runs_16x16-*.npz"))) == 1
    for f in ("mark_step", "mark_beta", "log_beta", "final_beta", "diverged"):
        np.testing.assert_array_equal(getattr(a, f), getattr(b, f))
    assert (a.stop_index, a.final_step) == (b.stop_index, b.final_step)
    k = int(b.kept.sum())  # at beta0 = 1 one of the two corpora diverges
    assert k == 1 and np.isnan(b.final_beta[b.diverged]).all()
    sq, extra = stop_errors([b], [8, 32], n_ctx=5)
    assert sq[0].shape == extra[0].shape == (k, 2, 5)
    np.testing.assert_allclose(sq[0][:, 1], sq_errors(*b.at_stop(), 32, n_ctx=5).mean(1))
    cont = end_errors([b], 32, n_ctx=5, n_ctx_path=3)
    assert cont[0]["end"].shape == (k,) and cont[0]["path"].shape == (k, b.log_beta.shape[1])


def test_gain_past_stop_is_the_median_ratio_with_a_runs_bootstrap():
    from stumplib.book.studies.staged import gain_past_stop

    rng = np.random.default_rng(2)
    end = [rng.uniform(0.01, 0.02, 3) for _ in range(3)]
    stop = [e * g for e, g in zip(end, (2.0, 3.0, 5.0))]
    est = gain_past_stop(stop, end, n_boot=50)
    assert est.value == pytest.approx(3.0) and est.lo == pytest.approx(3.0)
    noisy = gain_past_stop([s * rng.uniform(0.8, 1.2, 3) for s in stop], end, n_boot=200)
    assert noisy.lo < noisy.value < noisy.hi and 2.0 < noisy.value < 4.5


def test_law_kept_past_stop_is_one_on_the_head_law_and_resamples_contexts():
    from stumplib.book.studies.staged import law_kept_past_stop

    rng = np.random.default_rng(4)
    # two shapes, 3 runs, 200 shared contexts: squared errors (1/beta)^2 x exponential noise
    ctx = rng.exponential(size=(1, 200))
    bs = [np.array([20.0, 21.0, 19.0]), np.array([40.0, 41.0, 39.0])]
    be = [np.full(3, 100.0), np.full(3, 100.0)]
    stop = [(1 / b[:, None]) ** 2 * ctx for b in bs]
    end = [(1 / b[:, None]) ** 2 * ctx for b in be]
    exact = law_kept_past_stop(stop, end, bs, be, n_boot=50)
    assert exact.value == pytest.approx(1.0) and exact.width < 1e-12  # shared contexts cancel
    # contexts that differ between the two ends (the end sharper on some): the interval now
    # holds the context noise, which a runs-only bootstrap of paired errors would miss
    end2 = [(1 / b[:, None]) ** 2 * rng.exponential(size=(1, 200)) for b in be]
    noisy = law_kept_past_stop(stop, end2, bs, be, n_boot=400)
    # the ratio of two means of 200 exponentials: sd ~ sqrt(2/200)/2 = 0.05 in the RMSE ratio
    assert 0.05 < noisy.width < 0.5 and noisy.contains(1.0, tol=0.05)
    with pytest.raises(ValueError, match="one entry per shape"):
        law_kept_past_stop(stop, end, bs[:1], be)
