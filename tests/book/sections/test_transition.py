"""Tests of stumplib.book.sections.transition: chapter 6's verdicts and table rows on the
transition, the replay, the branch's end and stability, and the minimisers' decision."""
from __future__ import annotations

import numpy as np

from stumplib.phase.crossings import branch_end


def test_stability_verdict_on_a_constructed_set_of_points():
    """Converged points only; holds when every derivative is at most +1, fails above."""
    from stumplib.book.sections.transition import stability_verdict
    v = stability_verdict([-2.5, 0.9, np.nan, 0.3, 5.0], ["converged"] * 4 + ["undecided"])
    assert v.status == "holds" and "= 0.9 at 3 converged points" in v.sentence
    v = stability_verdict([-2.5, 1.2], ["converged"] * 2, direction="theta")
    assert v.status == "fails" and "∂Fθ/∂θ" in v.sentence  # typeset: ∂F_theta/∂theta
    assert stability_verdict([np.nan], ["converged"]).status == "undecided"


def test_replay_verdict_per_branch():
    from stumplib.book.sections.transition import replay_verdict
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


def test_semantic_end_verdict_locates_the_fitted_end_within_the_registrys_width():
    """Issue 47, part 7: the end is the fitted alpha_end; it holds when its interval is finite and
    at most the registry's 0.02 wide, and is undecided when wider or not located."""
    from stumplib.book.registry import rule_arguments
    from stumplib.book.sections.transition import semantic_end_verdict
    from stumplib.core.stats import Estimate

    assert rule_arguments("phase_semantic_end")["max_width"] == 0.02
    v = semantic_end_verdict(Estimate(0.708, 0.701, 0.715, "quadrature"))
    assert v.status == "holds" and "0.708" in v.sentence
    assert semantic_end_verdict(Estimate(0.71, 0.69, 0.73, "quadrature")).status == "undecided"
    assert semantic_end_verdict(Estimate.nan("quadrature")).status == "undecided"
    a = np.array([1.0, 0.9, 0.8, 0.7])  # the grid's bracket is still a description
    e = branch_end(a, ["converged", "converged", "no_fixed_point", "no_fixed_point"])
    assert (e.lo, e.hi) == (0.8, 0.9)


def test_published_tail_and_end_fit_rows():
    from stumplib.book.sections.transition import end_fit_rows, published_tail

    pub = dict(alpha=np.array([0.01, 0.35, 0.681, 1.02]), theta=np.array([3e-4, 0.02, 0.06, 0.1]))
    got = published_tail(pub, 0.705)
    assert got == dict(alpha_min_positive=0.01, alpha_near=0.681, theta_near=0.06)
    assert np.isnan(published_tail(pub, np.nan)["theta_near"])
    sw = dict(outcome=np.array(["converged", "undecided"]), seconds=np.array([1.0, 2.0]))
    fit = dict(sweeps=[sw], fits=[dict(alpha_end=0.7, err=0.003, chi2=2.0, dof=1.0)])
    row = end_fit_rows(fit)[0]
    assert row["converged points"] == "1 of 2" and row["χ²/dof"] == 2.0 and row["seconds"] == 3.0


def _forms(line, quadratic, drop, dmax_z=(-3.0, 1.0)):
    """A decision with three extrapolations given as (z accurate, z published) per alpha."""
    forms = {k: dict(z_accurate=np.asarray(za, float), z_published=np.asarray(zp, float))
             for k, (za, zp) in (("line", line), ("quadratic", quadratic), ("drop_smallest", drop))}
    return dict(forms=forms, dmax=4000, dmax_z_accurate=np.array([dmax_z[0], np.nan]),
                dmax_z_published=np.array([dmax_z[1], np.nan]))


def test_gd_decision_verdict_decides_only_where_the_three_extrapolations_agree():
    from stumplib.book.sections.transition import gd_decision_verdict

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
    from stumplib.book.sections.transition import limit_position

    s = limit_position(-4.4, 5.0)
    assert "between the theories" in s and "4.4 standard errors below the accurate" in s
    assert "5.0 above the published" in s
    assert "beyond both theories, on the side of the published" in limit_position(-8.0, -1.0)
    assert "not measured" in limit_position(np.nan, 1.0)


def test_extrapolation_rows_one_per_form_and_alpha_plus_the_largest_d():
    from stumplib.core.stats import Estimate
    from stumplib.book.sections.transition import extrapolation_rows

    dec = _forms(([0.5, -1.0], [6.0, 5.0]), ([1.5, 0.2], [4.5, 4.1]), ([0.4, -0.9], [5.5, 4.8]))
    for f in dec["forms"].values():
        f["limit"] = [Estimate(0.0028, 0.00275, 0.00285), Estimate(0.0023, 0.0022, 0.0024)]
    dec.update(dmax_mean=np.array([0.0027645, 0.0024]), dmax_se=np.array([8.6e-6, 9e-6]))
    rows = extrapolation_rows(dec, [1.0164, 1.25])
    assert len(rows) == 8 and rows[0]["test error"] == "0.002800 [0.002750, 0.002850]"
    assert rows[1]["z published"] == 5.0 and rows[6]["extrapolation"] == "none: mean at d = 4000"
    assert rows[6]["test error"] == "0.002765 ± 0.000009" and rows[6]["z accurate"] == -3.0
