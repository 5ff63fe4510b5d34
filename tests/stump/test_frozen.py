"""Frozen estimators: the two-term law fit, the staged GD with its exact stop, fresh-context errors."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from stumplib.stump.frozen import (bootstrap_two_term, bound, bound_form_spread, fit_two_term, fresh_contexts,
                             sq_errors, stage_marks, train_staged)
from stumplib.stump.model import estimate
from stumplib.stump.tasks import sample_tasks
from stumplib.stump.corpus_grad import corpus_grad
from stumplib.stump.transfer import population_path, step_size_limit


def test_two_term_fit_recovers_known_exponents_on_synthetic_data():
    rng = np.random.default_rng(1)
    beta, N = np.meshgrid(2.0 ** np.arange(4, 11), 2.0 ** np.arange(5, 12), indexing="ij")
    b, n = beta.ravel(), N.ravel()
    truth = 1.0 * b ** -2.0 + 2.0 * n ** -1.6  # p = 1, q = 0.8
    fit = fit_two_term(b, n, truth)
    assert fit["p"] == pytest.approx(1.0, abs=1e-4) and fit["q"] == pytest.approx(0.8, abs=1e-4)
    assert fit["A"] == pytest.approx(1.0, rel=1e-3) and fit["B"] == pytest.approx(2.0, rel=1e-3)
    # noisy units (exponential squared errors with the right mean): the interval covers the truth
    sq = truth[:, None] * rng.exponential(size=(truth.size, 400))
    est = bootstrap_two_term(b, n, sq, n_boot=60, seed=0)
    assert est["p"].contains(1.0) and est["q"].contains(0.8)
    assert est["p"].width < 0.2


def test_bound_form_spread_is_one_on_the_exact_form():
    mn, N = np.meshgrid([128.0, 256.0, 512.0], [16.0, 256.0, 4096.0], indexing="ij")
    spread, A1, B1 = bound_form_spread(mn, N, 3.0 / mn + 0.5 / N)
    assert spread == pytest.approx(1.0, abs=1e-9) and A1 == pytest.approx(3.0) and B1 == pytest.approx(0.5)
    spread2, _, _ = bound_form_spread(mn, N, mn ** -0.5 + 1.0 / N)  # another rate: spread > 1
    assert spread2 > 1.5
    np.testing.assert_allclose(bound([2.0], [4.0]), [0.75])


def test_sq_errors_match_the_model_estimator():
    taus = [0.3, 0.5]
    out = sq_errors([30.0, 60.0], [25.0, 50.0], 64, taus=taus, n_ctx=7, seed=3, max_elems=100)
    x, y = fresh_contexts(64, torch.tensor(taus), 7, seed=3)
    f = estimate(x, y, torch.tensor(60.0), torch.tensor(50.0))
    np.testing.assert_allclose(out[1], ((f - torch.tensor(taus)[:, None]) ** 2).numpy(), rtol=1e-12)
    assert out.shape == (2, 2, 7)


def test_stage_marks():
    np.testing.assert_allclose(stage_marks(2.5, 10.0, 45.0), [5.0, 10.0, 20.0, 40.0, 45.0])


def test_staged_gd_stops_at_the_first_step_past_beta_star():
    beta0, bstop = 3.0, 6.5
    r = train_staged(32, 32, [0, 1], beta0=beta0, beta_stop=bstop, beta_end=13.0, device="cpu")
    stop_beta, stop_b = r.at_stop()
    assert np.all(r.stop_step > 0) and np.all(stop_beta >= bstop)
    # replay GD by hand with the same schedule and the general corpus gradient (not the trainer's
    # sorted kernel): one step earlier, beta was still below beta*; every mark at the same step
    corp = [sample_tasks(32, 32, 0.2, 0.8, seed=s, device="cpu") for s in (0, 1)]
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


def test_staged_runs_come_back_from_the_cache_as_they_were(tmp_path, monkeypatch):
    """Trained, cached, reloaded: the same :class:`StagedRuns`; stop and end errors keep only the
    runs that did not diverge."""
    from stumplib.stump.frozen import StagedRuns, end_errors, stop_errors, train_to_certified_stop

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


def _stop_data(rng, spread_beta: float, n_boot: int = 60):
    """Synthetic errors at certified stops beta* = 0.1 (m∧n) on the head's law (p = q = 1,
    A = 1, B = 2), exponential context noise, and beta* replicates with log-spread ``spread_beta``."""
    from stumplib.stump.frozen import head_mse

    head = {"A": 1.0, "p": 1.0, "B": 2.0, "q": 1.0}
    mn = np.array([128.0, 256.0, 512.0, 1024.0])
    Ns = 2.0 ** np.arange(4, 13)
    bs = 0.1 * mn
    sq = [head_mse(b, Ns, head)[None, :, None] * rng.exponential(size=(3, Ns.size, 40)) for b in bs]
    boot = bs[None, :] * np.exp(spread_beta * rng.standard_normal((n_boot, mn.size)))
    return mn, Ns, sq, bs, boot, head


def test_stop_law_bootstrap_recovers_exponents_and_carries_the_beta_star_uncertainty():
    from stumplib.stump.frozen import bootstrap_stop_law

    mn, Ns, sq, bs, boot, head = _stop_data(np.random.default_rng(0), 0.15)
    wide = bootstrap_stop_law(mn, Ns, sq, bs, boot, head, n_boot=60, seed=1)
    narrow = bootstrap_stop_law(mn, Ns, sq, bs, np.tile(bs, (60, 1)), head, n_boot=60, seed=1)
    assert wide["p"].value == pytest.approx(1.0, abs=0.1) and wide["p"].contains(1.0)
    assert wide["q"].value == pytest.approx(1.0, abs=0.1)
    # a spread of 0.15 in log beta* over three octaves of m∧n: a slope uncertainty of ~0.1
    assert wide["p"].width > 2 * narrow["p"].width
    assert 0.15 < wide["p"].width < 0.8


def test_stop_law_uses_each_beta_star_replicate_once_and_counts_the_missing():
    """Ten of 60 beta* replicates are NaN at one shape: the law has 50 replicates (no reuse of the
    survivors), says so, and equals the law computed from the 50 finite rows alone (the run and
    context draws of replicate b do not depend on n_boot: one seeded stream, row by row)."""
    from stumplib.stump.frozen import bootstrap_stop_law

    mn, Ns, sq, bs, boot, head = _stop_data(np.random.default_rng(0), 0.15)
    holes = boot.copy()
    holes[::6, 2] = np.nan
    got = bootstrap_stop_law(mn, Ns, sq, bs, holes, head, n_boot=60, seed=1)
    clean = bootstrap_stop_law(mn, Ns, sq, bs, holes[np.isfinite(holes).all(1)], head, n_boot=50,
                               seed=1)
    for k in ("p", "q", "A", "B"):
        assert (got[k].n, got[k].n_dropped) == (50, 10)
        assert "10 of 60 replicates without a beta* replicate" in got[k].dropped
        assert (got[k].value, got[k].lo, got[k].hi) == (clean[k].value, clean[k].lo, clean[k].hi)
        assert (clean[k].n, clean[k].n_dropped, clean[k].dropped) == (50, 0, "")


def test_gain_past_stop_is_the_median_ratio_with_a_runs_bootstrap():
    from stumplib.stump.frozen import gain_past_stop

    rng = np.random.default_rng(2)
    end = [rng.uniform(0.01, 0.02, 3) for _ in range(3)]
    stop = [e * g for e, g in zip(end, (2.0, 3.0, 5.0))]
    est = gain_past_stop(stop, end, n_boot=50)
    assert est.value == pytest.approx(3.0) and est.lo == pytest.approx(3.0)
    noisy = gain_past_stop([s * rng.uniform(0.8, 1.2, 3) for s in stop], end, n_boot=200)
    assert noisy.lo < noisy.value < noisy.hi and 2.0 < noisy.value < 4.5


def _grid_stop_data(diag_slope: float, seed: int = 0):
    """Errors at the certified stop on the book's grid of shapes: ``beta* = c (m∧n)^diag_slope
    (max/min)^0.6`` (the diagonal is the worst shape at each m∧n, chapter 3), errors on the head's
    law at that scale with exponential noise over 40 contexts and 3 runs."""
    from stumplib.stump.frozen import head_mse

    rng = np.random.default_rng(seed)
    shapes = [(128, 128), (256, 256), (512, 512), (1024, 1024),
              (128, 512), (256, 512), (512, 128), (512, 256)]
    head = {"A": 1.0, "p": 1.0, "B": 2.0, "q": 1.0}
    mn = np.array([min(s) for s in shapes], float)
    c = 0.08 * 128.0 ** (1 - diag_slope)  # beta* = 10.24 at m = n = 128 for every slope
    bs = np.array([c * min(s) ** diag_slope * (max(s) / min(s)) ** 0.6 for s in shapes])
    Ns = 2.0 ** np.arange(4, 13)
    sq = [head_mse(b, Ns, head)[None, :, None] * rng.exponential(size=(3, Ns.size, 40)) for b in bs]
    boot = bs[None, :] * np.exp(0.05 * rng.standard_normal((100, mn.size)))
    return mn, Ns, sq, bs, boot, head


def test_worst_case_bound_holds_where_the_all_shape_fit_is_shallow():
    from stumplib.book import verdicts as V
    from stumplib.stump.frozen import bootstrap_stop_law

    mn, Ns, sq, bs, boot, head = _grid_stop_data(1.0)
    mid = float(np.sqrt(128 * 1024))
    worst = bootstrap_stop_law(mn, Ns, sq, bs, boot, head, n_boot=60, seed=1, worst=True)
    every = bootstrap_stop_law(mn, Ns, sq, bs, boot, head, n_boot=60, seed=1)
    s_worst, s_every = worst["p"].scaled(-1.0), every["p"].scaled(-1.0)
    assert s_worst.contains(-1.0)
    assert V.rate_up_to_logs(s_worst, x_mid=mid, variable="m∧n").status == "holds"
    # off-diagonal shapes (lower error at small m∧n) flatten the all-shape slope past -1 + 1/ln x
    assert s_every.lo > V.log_slopes(mid)[0]
    assert V.rate_up_to_logs(s_every, x_mid=mid, variable="m∧n").status != "holds"


def test_worst_case_bound_fails_where_the_worst_shape_decays_too_slowly():
    from stumplib.book import verdicts as V
    from stumplib.stump.frozen import bootstrap_stop_law

    mn, Ns, sq, bs, boot, head = _grid_stop_data(0.5)
    law = bootstrap_stop_law(mn, Ns, sq, bs, boot, head, n_boot=60, seed=1, worst=True)
    s = law["p"].scaled(-1.0)
    # error ~ (m∧n)^-0.5 on the worst shapes: above -1 + 2/ln(362) = -0.66 with margin
    assert s.value == pytest.approx(-0.5, abs=0.08) and s.lo > -0.66
    assert V.rate_up_to_logs(s, x_mid=float(np.sqrt(128 * 1024)), variable="m∧n").status == "fails"


def test_law_kept_past_stop_is_one_on_the_head_law_and_resamples_contexts():
    from stumplib.stump.frozen import law_kept_past_stop

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
