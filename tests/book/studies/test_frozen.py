"""Frozen estimators (stumplib.book.studies.frozen): fresh-context errors against the model, the
two-term law fit, the law at the certified stop with its bootstrap, the bound's form."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from stumplib.book.studies.frozen import (bootstrap_two_term, bound, bound_form_spread, fit_two_term,
                                   fresh_contexts, sq_errors)
from stumplib.stump.model import estimate


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


def _stop_data(rng, spread_beta: float, n_boot: int = 60):
    """Synthetic errors at certified stops beta* = 0.1 (m∧n) on the head's law (p = q = 1,
    A = 1, B = 2), exponential context noise, and beta* replicates with log-spread ``spread_beta``."""
    from stumplib.book.studies.frozen import head_mse

    head = {"A": 1.0, "p": 1.0, "B": 2.0, "q": 1.0}
    mn = np.array([128.0, 256.0, 512.0, 1024.0])
    Ns = 2.0 ** np.arange(4, 13)
    bs = 0.1 * mn
    sq = [head_mse(b, Ns, head)[None, :, None] * rng.exponential(size=(3, Ns.size, 40)) for b in bs]
    boot = bs[None, :] * np.exp(spread_beta * rng.standard_normal((n_boot, mn.size)))
    return mn, Ns, sq, bs, boot, head


def test_stop_law_bootstrap_recovers_exponents_and_carries_the_beta_star_uncertainty():
    from stumplib.book.studies.frozen import bootstrap_stop_law

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
    from stumplib.book.studies.frozen import bootstrap_stop_law

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


def _grid_stop_data(diag_slope: float, seed: int = 0):
    """Errors at the certified stop on the book's grid of shapes: ``beta* = c (m∧n)^diag_slope
    (max/min)^0.6`` (the diagonal is the worst shape at each m∧n, chapter 3), errors on the head's
    law at that scale with exponential noise over 40 contexts and 3 runs."""
    from stumplib.book.studies.frozen import head_mse

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
    from stumplib.book.studies.frozen import bootstrap_stop_law

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
    from stumplib.book.studies.frozen import bootstrap_stop_law

    mn, Ns, sq, bs, boot, head = _grid_stop_data(0.5)
    law = bootstrap_stop_law(mn, Ns, sq, bs, boot, head, n_boot=60, seed=1, worst=True)
    s = law["p"].scaled(-1.0)
    # error ~ (m∧n)^-0.5 on the worst shapes: above -1 + 2/ln(362) = -0.66 with margin
    assert s.value == pytest.approx(-0.5, abs=0.08) and s.lo > -0.66
    assert V.rate_up_to_logs(s, x_mid=float(np.sqrt(128 * 1024)), variable="m∧n").status == "fails"
