"""Tests of stumplib.phase.transition: crossings, published curves and their replay, verdicts."""
from __future__ import annotations

import math

import numpy as np
import pytest

from stumplib.phase import Outcome, state_evolution
from stumplib.phase.replica import solve_fixed_rule
from stumplib.phase.transition import first_crossing

from conftest import POS_FILE, REF, SEM_FILE, needs_shared
from conftest import read_reference as _read



def test_first_crossing():
    x = np.array([0.0, 1.0, 2.0, 3.0])
    assert first_crossing(x, [0, 0, 1, 2], [1, 1, 0, 0]) == pytest.approx(1.5)
    assert math.isnan(first_crossing(x, [0, 0, 0, 0], [1, 1, 1, 1]))



def test_crossing_estimate_brackets_the_root_by_the_shifted_curves():
    """A straight line y = x - 0.5 with error 0.1: root 0.5, and y -+ 3 err cross at 0.8 and 0.2
    (exact under linear interpolation); a shifted curve that leaves the grid widens to its end."""
    from stumplib.phase.transition import crossing_estimate
    x = np.linspace(0.0, 1.0, 11)
    e = crossing_estimate(x, x - 0.5, np.full_like(x, 0.1))
    assert (e.value, e.lo, e.hi) == pytest.approx((0.5, 0.2, 0.8), abs=1e-12)
    assert e.kind == "quadrature"
    d = crossing_estimate(x, 0.5 - x, np.full_like(x, 0.1), direction="down")
    assert (d.value, d.lo, d.hi) == pytest.approx((0.5, 0.2, 0.8), abs=1e-12)
    # y + 0.6 lies above 0 everywhere (crossing at or below x = 0), y - 0.6 crosses beyond x = 1
    wide = crossing_estimate(x, x - 0.5, np.full_like(x, 0.2))
    assert (wide.value, wide.lo, wide.hi) == pytest.approx((0.5, 0.0, 1.0), abs=1e-12)
    late = crossing_estimate(x, x - 0.5, np.r_[np.full(6, 0.1), np.full(5, 0.2)])
    assert (late.lo, late.hi) == pytest.approx((0.2, 1.0), abs=1e-12)  # y - 3 err never crosses
    down = crossing_estimate(x, 0.5 - x, np.r_[np.full(6, 0.1), np.full(5, 0.2)], direction="down")
    assert (down.lo, down.hi) == pytest.approx((0.2, 1.0), abs=1e-12)
    assert crossing_estimate(x, x + 2.0, np.full_like(x, 0.1)).value == 0.0  # all on the far side
    assert math.isnan(crossing_estimate(x, x - 2.0, np.full_like(x, 0.1)).value)  # never gets there

@pytest.mark.slow
@needs_shared
def test_transition_matches_published_free_energies():
    """alpha_c from our training losses against alpha_c from the published Phi (larger Phi wins).

    Both crossings are linear interpolations on the published alpha grid. Measured: ours minus
    published = -0.0039 with 6 Gauss-Hermite nodes per axis and -0.0072 with 10, so the fixed
    rules' own error moves alpha_c by about 3e-3, and the published 144-node curves carry a rule
    error of the same order (their theta is 0.9% off the accurate one at alpha = 1); the tolerance
    0.02 is 2.5 times the larger difference (it was 0.1, 8% of alpha_c)."""
    sem = _read("theory_repl_softmax_Mixed_sig0.5_lamb0.01_omega0.3.csv")
    pos = _read("theory_repl_softmax_Mixed_sig0.5_lamb0.01_omega0.3_para.csv")
    assert np.allclose(sem["alpha"], pos["alpha"])
    order = np.argsort(sem["alpha"])
    a = sem["alpha"][order]
    ref_c = first_crossing(a, sem["Phi"][order], pos["Phi"][order])
    sel = (a > 0.9) & (a < 1.8)
    from stumplib.phase.transition import theory_curves
    th = theory_curves(a[sel], omega=0.3, n_nodes=6)
    assert abs(float(th["alpha_c"]) - ref_c) < 0.02, (float(th["alpha_c"]), ref_c)


@pytest.fixture(scope="module")
def stroud_fixed_points():
    out = {}
    for name, br in ((SEM_FILE, "semantic"), (POS_FILE, "positional")):
        ref = _read(name)
        sel = ref["alpha"] >= 0.3
        r = solve_fixed_rule(ref["alpha"][sel], omega=0.3, branch=br, rule="stroud", tol=1e-8, max_iter=3000)
        out[br] = (ref, sel, r)
    return out


#: largest relative deviation from the published files allowed for the authors' procedure stopped by
#: their rule (:func:`replay_authors`), per branch, at every published alpha >= 0.3: the issue's
#: 1e-3 on the semantic branch (measured 6.1e-4); on the positional branch the measured 1.8e-3 (q,
#: m, V), because there the published points are not where an exact-minimiser iteration stops (see
#: ``test_published_positional_points_fail_the_stopping_rule_with_exact_minimisers``).
#: What these numbers mean: the start of the replay (:data:`AUTHORS_START`, 4 numbers per branch)
#: was chosen by a search that minimised exactly this deviation, so they are the best agreement the
#: procedure reaches, not an independent confirmation: the test guards that the procedure (rule,
#: damping, stopping rule, proximal minimisers) still reaches it from that start. How much the
#: start matters: other starts of the same searches stopped up to 2.65e-3 (positional, the grid's
#: best) from the files, and the exact fixed points of the same rule, which no start can move,
#: stay within 3.5e-3 for alpha >= 1 (asserted below).
STOPPED_TOL = {"semantic": 1e-3, "positional": 2.5e-3}


@needs_shared
def test_stroud_rule_reproduces_the_published_fixed_points(stroud_fixed_points):
    """The authors' procedure (144-node rule, global proximal minimisers, damping 0.8, stop at
    undamped changes below 1e-4 in q, m, theta, same start for every alpha) reproduces the published
    q, V, theta (semantic) and q, m, V (positional) within ``STOPPED_TOL`` at every published alpha
    >= 0.3. The exact fixed points of the same rule stay within 3.5e-3 for alpha >= 1 and differ by
    up to 0.9% (semantic) and 2.6% (positional) below."""
    from stumplib.phase.transition import replay_authors
    for br, (ref, sel, r) in stroud_fixed_points.items():
        keys = ("q", "V", "theta") if br == "semantic" else ("q", "m", "V")
        a = ref["alpha"][sel]
        st = replay_authors(a, br)
        assert np.all(st["n_iter"] < 300), (br, st["n_iter"])
        for k in keys:
            rel = np.abs(r[k] / ref[k][sel] - 1)
            assert rel[a >= 1.0].max() < 3.5e-3, (br, k, a[np.argmax(rel)], rel.max())
            rs = np.abs(st[k] / ref[k][sel] - 1)
            assert rs.max() < STOPPED_TOL[br], (br, k, a[np.argmax(rs)], rs.max())


@needs_shared
def test_published_positional_points_fail_the_stopping_rule_with_exact_minimisers():
    """At the published semantic points the 144-node rule's undamped change is below the authors'
    1e-4 in q and theta (where they stopped); at some published positional points it is not (m or
    q change by more): those points carry their minimiser's error, of the stopping rule's size."""
    from stumplib.phase.transition import published_curves
    out = published_curves(REF)
    assert max(np.abs(out[f"sem_resid_{k}"]).max() for k in ("q", "theta")) < 1e-4
    assert max(np.abs(out[f"pos_resid_{k}"]).max() for k in ("q", "m")) > 1.5e-4


def test_stability_verdict_on_a_constructed_set_of_points():
    """Converged points only; holds when every derivative is at most +1, fails above."""
    from stumplib.phase.transition import stability_verdict
    v = stability_verdict([-2.5, 0.9, np.nan, 0.3, 5.0], ["converged"] * 4 + ["undecided"])
    assert v.status == "holds" and "= 0.9 at 3 converged points" in v.sentence
    v = stability_verdict([-2.5, 1.2], ["converged"] * 2, direction="theta")
    assert v.status == "fails" and "∂Fθ/∂θ" in v.sentence  # typeset: ∂F_theta/∂theta
    assert stability_verdict([np.nan], ["converged"]).status == "undecided"


def test_replay_verdict_per_branch():
    from stumplib.phase.transition import replay_verdict
    one = np.ones(3)
    pub = {}
    for b, dev in (("sem", 5e-4), ("pos", 2e-3)):
        for k in ("q", "m", "V", "theta"):
            pub[f"{b}_{k}"] = one
            pub[f"{b}_stopped_{k}"] = one * (1 + dev)
    v = replay_verdict(pub)
    assert v.status == "partly" and "5.0 × 10⁻⁴ (semantic)" in v.sentence and "2.0 × 10⁻³ (positional)" in v.sentence
    assert replay_verdict(pub, target=3e-3).status == "holds"
    assert replay_verdict(pub, target=1e-4).status == "fails"


def test_branch_end_and_its_verdict():
    from stumplib.phase.transition import branch_end, semantic_end_verdict
    a = np.array([1.0, 0.9, 0.8, 0.7])
    o = np.array(["converged", "converged", "no_fixed_point", "no_fixed_point"])
    e = branch_end(a, o)
    assert (e.lo, e.hi) == (0.8, 0.9) and semantic_end_verdict(e, a, o).status == "holds"
    o2 = np.array(["converged", "converged", "undecided", "no_fixed_point"])
    assert semantic_end_verdict(branch_end(a, o2), a, o2).status == "undecided"
    o3 = np.array(["converged"] * 4)
    assert semantic_end_verdict(branch_end(a, o3), a, o3).status == "undecided"


# ---------------------------------------------------------------- the authors' rule, replayed
@needs_shared
def test_stroud_fixed_points_is_far_from_the_accurate_rule_at_alpha_1(stroud_fixed_points):
    """At the published alpha = 1.016 the accurate rule's theta is below the 144-node fixed point by
    many of its quadrature errors: the published gap is the rule's, not the equations'."""
    ref, sel, r = stroud_fixed_points["semantic"]
    a = ref["alpha"][sel]
    i = int(np.argmin(np.abs(a - 1.0164)))
    acc = state_evolution(float(a[i]), omega=0.3, branch="semantic", rtol=2e-3, stability=False)
    assert acc["outcome"] == Outcome.CONVERGED
    assert r["theta"][i] - acc["theta"] > 10 * acc["theta_err"], (r["theta"][i], acc["theta"], acc["theta_err"])


def test_window_profiles_one_structured_entry_per_rule_reloaded_unchanged(tmp_path, monkeypatch):
    from stumplib import book
    from stumplib.phase.replica import theta_profile
    from stumplib.phase.transition import window_profiles

    monkeypatch.setenv(book.RESULTS_ENV, str(tmp_path))
    monkeypatch.delenv(book.CACHE_ENV, raising=False)
    thetas = np.linspace(0.14, 0.17, 3)
    rules = [("GH 4", "gauss-hermite", 4), ("GH 6", "gauss-hermite", 6)]
    got = window_profiles(2.0, thetas, rules, omega=0.3, sigma=0.5, lam=0.01)
    again = window_profiles(2.0, thetas, rules, omega=0.3, sigma=0.5, lam=0.01)  # reloaded
    assert len(got) == len(again) == 2 and len(list(tmp_path.glob("window_profiles-*.npz"))) == 1
    for k, (_, rule, nn) in enumerate(rules):
        ref = theta_profile(2.0, thetas, omega=0.3, sigma=0.5, lam=0.01, rule=rule, n_nodes=nn)
        for out in (got[k], again[k]):
            assert sorted(out) == sorted(ref)
            for key, v in ref.items():
                np.testing.assert_array_equal(out[key], np.asarray(v))
    assert not np.array_equal(got[0]["residual"], got[1]["residual"])  # the rules are kept apart


def _forms(line, quadratic, drop, dmax_z=(-3.0, 1.0)):
    """A decision with three extrapolations given as (z accurate, z published) per alpha."""
    forms = {k: dict(z_accurate=np.asarray(za, float), z_published=np.asarray(zp, float))
             for k, (za, zp) in (("line", line), ("quadratic", quadratic), ("drop_smallest", drop))}
    return dict(forms=forms, dmax=4000, dmax_z_accurate=np.array([dmax_z[0], np.nan]),
                dmax_z_published=np.array([dmax_z[1], np.nan]))


def test_gd_decision_verdict_decides_only_where_the_three_extrapolations_agree():
    from stumplib.phase.transition import gd_decision_verdict

    follow = ([0.5, -1.0], [6.0, 5.0])
    v = gd_decision_verdict(_forms(follow, ([1.5, 0.2], [4.5, 4.1]), follow), [1.0164, 1.25])
    assert v.status == "holds" and "all three extrapolations agree" in v.sentence
    assert "-3.0 standard errors" in v.sentence
    neither = ([-4.4, -1.0], [5.0, 4.9])
    v = gd_decision_verdict(_forms(neither, ([-2.6, 0.1], [2.7, 3.2]), ([-3.3, -0.2], [3.7, 4.1])),
                            [1.0164, 1.25], qualifier="stored run")
    assert v.status == "undecided" and "disagree" in v.sentence and "straight line in 1/d: fails" in v.sentence
    assert "with a 1/d² term: undecided" in v.sentence and v.sentence.endswith("(stored run).")
    nan = ([np.nan, np.nan], [np.nan, np.nan])
    assert gd_decision_verdict(_forms(follow, nan, follow), [1.0164, 1.25]).status == "undecided"
    v = gd_decision_verdict(_forms(neither, neither, neither, dmax_z=(np.nan, np.nan)), [1.0164, 1.25])
    assert v.status == "fails" and "at d =" not in v.sentence


def test_limit_position_says_between_or_beyond():
    from stumplib.phase.transition import limit_position

    s = limit_position(-4.4, 5.0)
    assert "between the theories" in s and "4.4 standard errors below the accurate" in s
    assert "5.0 above the published" in s
    assert "beyond both theories, on the side of the published" in limit_position(-8.0, -1.0)
    assert "not measured" in limit_position(np.nan, 1.0)


def test_extrapolation_rows_one_per_form_and_alpha_plus_the_largest_d():
    from stumplib.core.stats import Estimate
    from stumplib.phase.transition import extrapolation_rows

    dec = _forms(([0.5, -1.0], [6.0, 5.0]), ([1.5, 0.2], [4.5, 4.1]), ([0.4, -0.9], [5.5, 4.8]))
    for f in dec["forms"].values():
        f["limit"] = [Estimate(0.0028, 0.00275, 0.00285), Estimate(0.0023, 0.0022, 0.0024)]
    dec.update(dmax_mean=np.array([0.0027645, 0.0024]), dmax_se=np.array([8.6e-6, 9e-6]))
    rows = extrapolation_rows(dec, [1.0164, 1.25])
    assert len(rows) == 8 and rows[0]["test error"] == "0.002800 [0.002750, 0.002850]"
    assert rows[1]["z published"] == 5.0 and rows[6]["extrapolation"] == "none: mean at d = 4000"
    assert rows[6]["test error"] == "0.002765 ± 0.000009" and rows[6]["z accurate"] == -3.0
