"""Tests of stumplib.phase.solver: the accuracy-controlled state evolution (public functions only)."""
from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest

from stumplib.phase import AccuracyNotReached, Outcome, state_evolution
from stumplib.phase.replica import se_update
from stumplib.phase.solver import OUTPUT_KEYS, StateEvolutionResult, estimate, scrambled_rules
from stumplib.phase import SolverOptions, UpdateOptions, check_model

from conftest import POS_FILE, SEM_FILE
from conftest import read_reference as _read



@pytest.fixture(scope="module")
def accurate_alpha2():
    return state_evolution(2.0, model=check_model(omega=0.3, branch="semantic"),
                           options=SolverOptions(rtol=1e-3))


def test_solver_converges_with_its_error_estimate(accurate_alpha2):
    r = accurate_alpha2
    assert r["outcome"] == Outcome.CONVERGED
    assert r["test_error_err"] <= 1e-3 * r["test_error"]
    for k in ("q", "V", "theta", "test_error", "train_loss"):
        assert np.isfinite(r[k]) and r[f"{k}_err"] > 0, k
    assert r["m"] == 0 and r["theta"] > 0.1
    # the published alpha = 2 point is accurate to ~0.5% (PHASE.md): same branch
    assert abs(r["test_error"] / 0.0027930868446673918 * 2 - 1) < 0.02


def test_solver_error_estimate_covers_an_independent_more_accurate_rule(accurate_alpha2):
    """A second family of scramblings (seed 1) at a 3x tighter target agrees with the first within
    the reported errors (three combined standard errors)."""
    r, ref = accurate_alpha2, state_evolution(2.0, seed=1,
                                              model=check_model(omega=0.3, branch="semantic"),
                                              options=SolverOptions(rtol=3e-4))
    assert ref["outcome"] == Outcome.CONVERGED
    for k in ("q", "V", "theta", "test_error", "train_loss"):
        assert abs(r[k] - ref[k]) <= 3 * math.hypot(r[f"{k}_err"], ref[f"{k}_err"]), (k, r[k], ref[k])


def test_solver_stability_of_the_suppressed_direction(accurate_alpha2):
    """dF_m/dm at m = 0 on the semantic branch at alpha = 2: below -1 (the undamped update oscillates
    along m; the damped one with eta = 0.8 contracts), so not unstable for the damped iteration."""
    r = accurate_alpha2
    lam = r["suppressed_derivative"]
    assert np.isfinite(lam) and lam < -1 and r["unstable_undamped"] and not r["unstable"]
    assert abs(0.8 + 0.2 * lam) < 1


def test_result_reads_as_attributes_and_as_a_dict(accurate_alpha2):
    """The result is a dataclass that reads like the dict of arrays it replaced: keys in the
    documented order, attribute and key access to the same objects, scalars for a scalar alpha."""
    r = accurate_alpha2
    assert isinstance(r, StateEvolutionResult)
    assert list(r)[:12] == list(OUTPUT_KEYS) + [f"{k}_err" for k in OUTPUT_KEYS]
    assert list(r)[12:] == ["outcome", "reason", "log2_points", "n_updates", "suppressed_derivative",
                            "suppressed_derivative_err", "unstable", "unstable_undamped",
                            "jacobian_eigenvalue", "seconds", "alpha", "n_scramblings"]
    assert r.theta is r["theta"] and dict(r)["outcome"] == r.outcome and len(r) == 24
    assert np.ndim(r.theta) == 0 and r.alpha == 2.0 and r.n_scramblings == 12 and isinstance(r.reason, str)
    with pytest.raises(KeyError):
        r["theta_error"]


def test_solver_raises_when_the_target_cannot_be_met():
    with pytest.raises(AccuracyNotReached, match="rtol"):
        state_evolution(2.0, model=check_model(omega=0.3),
                        options=SolverOptions(rtol=1e-5, min_log2_points=8, max_log2_points=9))
    r = state_evolution(2.0, on_accuracy="undecided", model=check_model(omega=0.3),
                        options=SolverOptions(rtol=1e-5, min_log2_points=8, max_log2_points=9,
                                              stability=False))
    assert r["outcome"] == Outcome.UNDECIDED and "rtol" in r["reason"]
    assert np.isfinite(r["test_error_err"]) and r["test_error_err"] > 1e-5 * r["test_error"]


def test_solver_positional_branch_and_the_vanishing_semantic_branch():
    """Positional branch at alpha = 2 converges with m > 0. The semantic branch at alpha = 0.3
    collapses: its fixed point has theta zero within the quadrature error (measured 1.7e-4 +-
    8.8e-4 against theta ~ 0.1 and more where the branch exists), which the solver reports as
    undecided with that reason, never as a converged semantic point."""
    r = state_evolution(2.0, model=check_model(omega=0.3, branch="positional"),
                        options=SolverOptions(rtol=3e-3))
    assert r["outcome"] == Outcome.CONVERGED and r["m"] > 0.2 and r["theta"] == 0
    assert abs(r["test_error"] / (0.006980917367439443 / 2) - 1) < 0.02
    s = state_evolution(0.3, on_accuracy="undecided",
                        model=check_model(omega=0.3, branch="semantic"),
                        options=SolverOptions(rtol=3e-3, max_log2_points=12))
    assert s["outcome"] == Outcome.UNDECIDED
    assert s["reason"].startswith("theta is zero within its quadrature error")
    assert abs(s["theta"]) < 5e-3 and s["m"] == 0


@pytest.mark.slow
def test_solver_returns_a_named_outcome_at_every_published_alpha():
    """Every published alpha >= 0.3 at omega = 0.3, both branches: one of the three named outcomes,
    never an exception, never a converged point off its branch."""
    for name, br in ((SEM_FILE, "semantic"), (POS_FILE, "positional")):
        ref = _read(name)
        a = ref["alpha"][ref["alpha"] >= 0.3]
        r = state_evolution(a, on_accuracy="undecided", model=check_model(omega=0.3, branch=br),
                            options=SolverOptions(rtol=5e-3, max_log2_points=12,
                                                  stability=False))
        assert set(r["outcome"]) <= set(Outcome.ALL)
        conv = r["outcome"] == Outcome.CONVERGED
        assert np.all((r["theta"] if br == "semantic" else r["m"])[conv] > 0)
        assert conv[a >= 1.3].all(), (br, a[~conv])


@pytest.mark.slow
def test_solver_named_outcome_where_the_fixed_rule_raised():
    """omega = 0.5, alpha = 1.03, semantic: Gauss-Hermite 10^4 raised StateEvolutionError here. The
    pooled rule reaches a fixed point whose theta is zero within its quadrature error (measured
    2.6e-3 +- 1.5e-3 at 12 scramblings of 2^13): undecided, with that reason, and a finite test
    error with its error bar."""
    r = state_evolution(1.03, on_accuracy="undecided",
                        model=check_model(omega=0.5, branch="semantic"),
                        options=SolverOptions(rtol=3e-3, max_log2_points=14, stability=False))
    assert r["outcome"] == Outcome.UNDECIDED
    assert r["reason"].startswith("theta is zero within its quadrature error")
    assert np.isfinite(r["test_error"]) and 0 < r["test_error_err"] < 1e-3 * r["test_error"]


def _own_fixed_point(a, z, nodes, tol=1e-9, h=1e-6):
    """The semantic fixed point of one scrambling's own rule (``m = 0``), by Newton's method on
    ``q, V, theta`` with the update of :func:`se_update` (global proximal minimisers) and a
    forward-difference Jacobian (minimisers followed from the update's)."""
    w = np.full(nodes.shape[0], 1.0 / nodes.shape[0])
    keys, free = ("q", "m", "V", "theta"), [0, 2, 3]

    def F(z, warm=None):
        up = se_update(a, *z, warm=warm, model=check_model(omega=0.3),
                       options=UpdateOptions(nodes=nodes, weights=w, with_test_error=False,
                                             restart=warm is None))
        f = np.array([float(up[k][0]) for k in keys])
        f[1] = 0.0
        return f, up["prox"]

    for _ in range(30):
        f, prox = F(z)
        g = (f - z)[free]
        if np.max(np.abs(g / z[free])) < tol:
            return z
        J = np.empty((3, 3))
        for j, c in enumerate(free):
            zj = z.copy(); zj[c] += h * z[c]
            J[:, j] = (F(zj, prox)[0] - f)[free] / (h * z[c])
        z = z.copy()
        z[free] += np.linalg.solve(np.eye(3) - J, g)
    raise AssertionError(f"no fixed point at alpha={a}")


def test_solver_delta_method_matches_per_scrambling_fixed_points():
    """The error estimate's ingredients: the fixed point of each scrambling's own rule, solved
    separately (Newton on the public update), agrees with the delta method's (residual at the
    pooled fixed point through (I - J)^{-1}); so their spread, the reported standard error, is the
    spread of the K fixed points, and their mean is the pooled fixed point."""
    from scipy.stats import t as student_t
    K, p, a = 6, 10, 2.0
    r = state_evolution(a, model=check_model(omega=0.3),
                        options=SolverOptions(rtol=0.1, n_scramblings=K, min_log2_points=p,
                                              max_log2_points=p + 1, stability=False))
    assert r["outcome"] == Outcome.CONVERGED and r["log2_points"] == p
    nodes, _ = scrambled_rules(p, K, 0)
    z0 = np.array([r["q"], 0.0, r["V"], r["theta"]])
    th = np.array([_own_fixed_point(a, z0, nodes[k])[3] for k in range(K)])
    se = th.std(ddof=1) / math.sqrt(K) * student_t.ppf(0.975, K - 1) / 1.959963984540054
    assert abs(th.mean() - r["theta"]) < 0.3 * se, (th.mean(), r["theta"], se)
    assert 0.8 < r["theta_err"] / se < 1.25, (r["theta_err"], se)


def test_sweep_by_continuation_reaches_the_points_solved_alone():
    """A sweep (continuation: predicted start, neighbour's Jacobian, minimisers and rule) reaches the
    same fixed points of the same pooled rule as solving each alpha alone from the default start (to
    the fixed-point tolerance: measured 3e-4 to 2e-3 of the quadrature errors), with at most half the
    map evaluations (measured 8 against 23 and 25)."""
    opts = SolverOptions(rtol=5e-3, stability=False, min_log2_points=10, max_log2_points=11)
    sweep = state_evolution([1.8, 1.7, 1.6], model=check_model(omega=0.3), options=opts)
    for j, a in ((1, 1.7), (2, 1.6)):
        alone = state_evolution(a, model=check_model(omega=0.3),
                                options=replace(opts, continuation=False))
        assert sweep["outcome"][j] == alone["outcome"] == Outcome.CONVERGED
        assert sweep["log2_points"][j] == alone["log2_points"]
        for k in ("q", "V", "theta", "test_error"):
            assert abs(sweep[k][j] - alone[k]) < 0.02 * alone[f"{k}_err"], (a, k, sweep[k][j], alone[k])
        assert 2 * sweep["n_updates"][j] <= alone["n_updates"], (a, sweep["n_updates"][j], alone["n_updates"])


def test_solver_same_seed_same_numbers():
    kw = dict(model=check_model(omega=0.3), options=SolverOptions(rtol=1e-2, stability=False))
    r1, r2 = state_evolution([2.0, 1.8], **kw), state_evolution([2.0, 1.8], **kw)
    for k in ("q", "V", "theta", "test_error", "test_error_err", "log2_points", "n_updates"):
        assert np.array_equal(r1[k], r2[k]), k


def test_solver_estimate_is_the_book_type(accurate_alpha2):
    from stumplib.core.stats import Estimate
    e = estimate(accurate_alpha2, "test_error")
    assert isinstance(e, Estimate) and e.kind == "quadrature"
    assert e.lo < accurate_alpha2["test_error"] < e.hi
    with pytest.raises(ValueError, match="key"):
        estimate(accurate_alpha2, "alpha")


def test_state_evolution_does_not_depend_on_the_number_of_threads(monkeypatch):
    """The pooled rule split over two threads (by whole scramblings) gives the same fixed point, error
    and outcome, bit for bit, as one thread."""
    out = {}
    for n in ("1", "2"):
        monkeypatch.setenv("STUMPLIB_THREADS", n)
        out[n] = state_evolution([2.0, 1.8], model=check_model(omega=0.3, branch="semantic"),
                                 options=SolverOptions(rtol=3e-3, max_log2_points=13,
                                                       stability=False))
    for k in ("q", "V", "theta", "test_error", "test_error_err", "log2_points"):
        assert np.array_equal(out["1"][k], out["2"][k]), k
    assert list(out["1"]["outcome"]) == list(out["2"]["outcome"]) == ["converged", "converged"]
