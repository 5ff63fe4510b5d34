"""Tests of stumplib.phase.solver_search: one alpha's search over numbers of points, the
delta-method error, the outcome, and what a sweep carries from one point to the next."""
from __future__ import annotations

import math

import numpy as np
import pytest

from stumplib.phase.setting import StateEvolutionError, check_model
from stumplib.phase.solver_search import (AccuracyNotReached, Outcome, Point, SolveSetup, Sweep,
                                          solve_point)
from stumplib.phase import SolverOptions


def _setup(branch="semantic", **kw):
    args = dict(K=4, pmin=8, pmax=10, seed=0, rtol=2e-2, continuation=True, stability=False,
                max_updates=150, on_accuracy="undecided")
    args.update(kw)
    return SolveSetup(model=check_model(omega=0.3, branch=branch), **args)


def test_setup_free_overlaps_order_parameter_and_tolerances():
    from scipy.stats import t as student_t
    s, p = _setup(), _setup("positional", rtol=1e-4)
    assert s.free.tolist() == [True, False, True, True] and s.order_name == "theta"
    assert p.free.tolist() == [True, True, True, False] and p.order_name == "m"
    assert (s.order_par, p.order_par) == (3, 1) and s.rho == 0.25 and s.branch == "semantic"
    assert s.ftol == 1e-5 and p.ftol == pytest.approx(1e-6)
    assert s.tq == pytest.approx(student_t.ppf(0.975, 3))
    assert set(s.kw) == {"omega", "sigma", "lam", "A"}
    assert issubclass(AccuracyNotReached, StateEvolutionError)
    assert Outcome.ALL == ("converged", "no_fixed_point", "undecided")


def test_solve_point_converges_and_the_sweep_remembers_it():
    """One semantic point at a loose target: converged with finite errors below the target, and
    the sweep keeps it for the next point's start."""
    s = _setup()
    sweep = Sweep(p_next=s.pmin)
    pt = solve_point(2.0, 0, None, sweep, s)
    assert isinstance(pt, Point) and pt.outcome == Outcome.CONVERGED, pt.reason
    assert pt.mean.shape == pt.err.shape == (6,) and np.all(np.isfinite(pt.err))
    assert pt.err[4] <= s.rtol * pt.mean[4] and pt.err[1] == 0  # m imposed: no error
    assert s.pmin <= pt.p <= s.pmax and pt.n_up > 0 and math.isfinite(pt.level.lam_max)
    sweep.record(2.0, pt, s)
    assert len(sweep.hist) == 1 and sweep.hist[0][0] == 2.0 and s.pmin <= sweep.p_next <= s.pmax
    nxt = sweep.start(1.9, None, s)  # continuation: predicted from the last point, its level
    assert nxt.p == sweep.p_next and nxt.final and nxt.jac is not None
    assert np.allclose(nxt.z0, pt.mean[:4], rtol=0.1) and nxt.z0[3] < pt.mean[3]  # theta falls


def test_solve_point_below_the_semantic_branch_is_not_converged():
    """At alpha = 0.3 the semantic branch is gone: never a converged semantic point."""
    s = _setup(pmax=9)
    pt = solve_point(0.3, 0, None, Sweep(p_next=s.pmin), s)
    assert pt.outcome in (Outcome.NO_FIXED_POINT, Outcome.UNDECIDED) and pt.reason


def test_no_fixed_point_only_at_the_converged_neighbours_level(monkeypatch):
    """Issue 47, part 7: 'no fixed point' was issued from one pooled iteration at whatever level
    the sweep had reached (down to 2^10) while the converged neighbour needed a finer rule. A rule
    coarser than the neighbour's that leaves the branch is refined to the neighbour's level first;
    the outcome is only issued there (or finer), and the point converges if that rule stays."""
    import stumplib.phase.solver_search as ss

    levels = []

    def leaves(a, i, st, sweep, s):  # every rule leaves the branch
        levels.append(st.p)
        st.final = False
        return None, {"status": "left_branch", "n_updates": 1}, False

    monkeypatch.setattr(ss, "_pooled_solve", leaves)
    s = _setup(pmin=8, pmax=12)
    sweep = Sweep(p_next=8, p_converged=11)
    pt = solve_point(0.7, 0, None, sweep, s)
    assert pt.outcome == Outcome.NO_FIXED_POINT and pt.p == 11 and levels == [8, 11]
    assert "2^11" in pt.reason
    levels.clear()  # no converged neighbour: the first level decides, as before
    pt = solve_point(0.7, 0, None, Sweep(p_next=8), s)
    assert pt.outcome == Outcome.NO_FIXED_POINT and levels == [8]
    levels.clear()  # the neighbour's level is capped by the largest rule allowed
    pt = solve_point(0.7, 0, None, Sweep(p_next=9, p_converged=14), s)
    assert pt.p == 12 and levels == [8, 12]


def test_state_evolution_reads_the_neighbours_level_from_init(monkeypatch):
    """``init["log2_points"]`` (the converged point a tail continues from) sets the level below
    which no point is declared without a fixed point."""
    import stumplib.phase.solver_search as ss
    from stumplib.phase.solver import state_evolution

    levels = []

    def leaves(a, i, st, sweep, s):
        levels.append(st.p)
        return None, {"status": "left_branch", "n_updates": 1}, False

    monkeypatch.setattr(ss, "_pooled_solve", leaves)
    init = dict(q=0.3, m=0.0, V=1.0, theta=0.05, log2_points=12)
    r = state_evolution([0.7], init=init, model=check_model(omega=0.3),
                        options=SolverOptions(rtol=2e-2, n_scramblings=4, min_log2_points=10,
                                              max_log2_points=13))
    assert r.outcome[0] == Outcome.NO_FIXED_POINT and r.log2_points[0] == 12
    assert levels == [10, 12]
