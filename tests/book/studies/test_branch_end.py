"""Tests of the fitted end of the semantic branch (stumplib.book.studies.curves.fit_branch_end,
combine_branch_ends, branch_end_fit): issue 47, part 7."""
from __future__ import annotations

import numpy as np
import pytest

from stumplib.book.studies.curves import branch_end_fit, combine_branch_ends, fit_branch_end

ALPHAS = np.linspace(0.72, 0.80, 9)
END, SLOPE = 0.7050, 0.045  # about the measured branch (theta* = 0.06 at 0.80)
Z = 1.959963984540054


def _theta(alphas=ALPHAS):
    return np.sqrt(SLOPE * (alphas - END))


def test_fit_recovers_the_end_of_an_exact_branch():
    f = fit_branch_end(ALPHAS, _theta(), np.full(ALPHAS.size, 1e-4))
    assert f["alpha_end"] == pytest.approx(END, abs=1e-10)
    assert f["slope"] == pytest.approx(SLOPE, rel=1e-8) and f["n"] == 9 and f["dof"] == 7
    assert f["chi2"] < 1e-12 and 0 < f["err"] < 5e-3 and f["err"] >= f["err_coherent"]


def test_fit_interval_covers_the_end_under_independent_shared_and_tilted_noise():
    """Synthetic sweeps: theta* with independent noise of its stated error, one error shared by
    every point, or a tilt across the window (+err at one end to -err at the other, times one
    normal draw: the pattern two measured families differ by; a sweep's scramblings are common to
    its points): +-1.96 err covers the true end in about 95% or more of the sweeps, and the
    interval stays below 0.02 wide. The independent-fit error alone covers the tilt in far fewer
    sweeps."""
    rng = np.random.default_rng(7)
    err = np.linspace(0.0006, 0.0012, ALPHAS.size)[::-1]  # larger near the end (0.72)
    ramp = np.linspace(1.0, -1.0, ALPHAS.size)
    for mode in ("independent", "shared", "tilt"):
        hits, hits_fit, widths = 0, 0, []
        for _ in range(400):
            z = {"independent": rng.standard_normal(ALPHAS.size),
                 "shared": rng.standard_normal(), "tilt": rng.standard_normal() * ramp}[mode]
            f = fit_branch_end(ALPHAS, _theta() + err * z, err)
            hits += abs(f["alpha_end"] - END) <= Z * f["err"]
            hits_fit += abs(f["alpha_end"] - END) <= Z * f["err_fit"]
            widths.append(2 * Z * f["err"])
        assert hits / 400 >= 0.93, (mode, hits)
        assert np.median(widths) < 0.02, (mode, np.median(widths))
        if mode == "tilt":
            assert hits_fit / 400 < 0.8, hits_fit


def test_fit_needs_two_points_and_a_rising_branch():
    assert np.isnan(fit_branch_end([0.8], [0.06], [0.001])["alpha_end"])
    assert np.isnan(fit_branch_end([0.8, 0.75], [0.03, 0.06], [0.001, 0.001])["alpha_end"])
    f = fit_branch_end([0.8, 0.76, 0.72, 0.7], [0.06, 0.05, np.nan, -0.01], [0.001] * 4)
    assert f["n"] == 2 and np.isfinite(f["alpha_end"])


def test_combine_scales_the_error_by_the_sweeps_disagreement():
    agree = combine_branch_ends([0.705, 0.706], [0.002, 0.002])
    assert agree.value == pytest.approx(0.7055) and agree.n == 2 and agree.kind == "quadrature"
    assert agree.hi - agree.value == pytest.approx(Z * 0.002 / np.sqrt(2))  # chi2 < 1
    apart = combine_branch_ends([0.700, 0.712], [0.002, 0.002])  # 4.2 combined errors apart
    chi2 = 2 * (0.006 / 0.002) ** 2
    assert apart.hi - apart.value == pytest.approx(Z * 0.002 / np.sqrt(2) * np.sqrt(chi2))
    assert apart.contains(0.700) and apart.contains(0.712)
    part = combine_branch_ends([0.705, np.nan], [0.002, np.nan])
    assert part.n == 1 and part.n_dropped == 1 and part.dropped
    assert np.isnan(combine_branch_ends([np.nan], [np.nan]).value)


def test_combine_weights_each_sweep_by_its_own_error():
    """A sweep with few converged points (a large error) barely moves the end or the interval: the
    inverse-variance mean, not the plain one (which would put the end at 0.71 +- 0.04)."""
    good, poor = combine_branch_ends([0.715], [0.002]), combine_branch_ends(
        [0.715, 0.705], [0.002, 0.08])
    w = np.array([1 / 0.002 ** 2, 1 / 0.08 ** 2])
    assert poor.value == pytest.approx((w @ [0.715, 0.705]) / w.sum())
    assert abs(poor.value - 0.715) < 1e-5 and poor.width <= good.width
    assert poor.hi - poor.value == pytest.approx(Z / np.sqrt(w.sum()))  # chi2 < 1: no scaling


def test_branch_end_fit_checks_its_arguments():
    with pytest.raises(ValueError, match="seed"):
        branch_end_fit([0.8, 0.75], omega=0.3, log2_points=10, seed=1000)
    with pytest.raises(ValueError, match="replicates"):
        branch_end_fit([0.8, 0.75], omega=0.3, log2_points=10, replicates=0)


@pytest.mark.slow
def test_fitted_end_error_bars_cover_the_spread_of_independent_sweeps():
    """Issue 47, part 7: three independent families of 12 scramblings of 2^12 and 2^13 points, five
    alphas from 0.80 to 0.72 (about 25 s a sweep on a quiet core): every pair of
    fitted ends agrees within 1.96 combined errors (the errors cover the spread between families),
    every sweep's end lies within 1.96 of its own errors of the combined end, and the combined
    interval is no wider than the best sweep's."""
    r = branch_end_fit([0.80, 0.78, 0.76, 0.74, 0.72], omega=0.3, log2_points=13,
                       replicates=3, seed=0, cache=False)
    ends = np.array([f["alpha_end"] for f in r["fits"]])
    errs = np.array([f["err"] for f in r["fits"]])
    assert np.all(np.isfinite(ends)) and np.all((ends > 0.65) & (ends < 0.75)), ends
    for i in range(3):
        for j in range(i):
            assert abs(ends[i] - ends[j]) <= Z * np.hypot(errs[i], errs[j]), (ends, errs)
    est = r["estimate"]  # the weighted mean: every sweep within its own errors of it
    assert est.n == 3 and np.all(np.abs(ends - est.value) <= Z * errs), (ends, errs, est)
    assert est.lo < est.value < est.hi and est.width <= Z * 2 * errs.min(), (errs, est)
