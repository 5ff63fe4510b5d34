"""Statistics: the book's one estimate-with-interval type, and every fit, bootstrap and crossing.

One module per job: :mod:`.estimate` (the type and the Student-t interval), :mod:`.resampling`
(bootstrap), :mod:`.ratios` (ratio intervals within their support), :mod:`.fits` (least squares
and power laws), :mod:`.crossings`; their public names are re-exported here, so ``from stumplib.core.stats import Estimate`` is the one way to import.

Every number a chapter reports with an uncertainty is an :class:`Estimate`: a value, an interval
``[lo, hi]``, what kind of interval it is (``kind``) and its level. The same type serves

- ``"seeds"``: a Student-t interval over independent replicates (:func:`mean_interval`);
- ``"bootstrap"``: a percentile bootstrap interval (:func:`bootstrap`, :func:`ratio_of_means`,
  :func:`two_way_ratio`, :func:`fit_power_law`, :func:`fit_replicates`); a ratio's interval
  respects its support (never below 0, never below a proven floor such as 1 for a risk over the
  Bayes risk: :mod:`.ratios`);
- ``"range"``: not an interval but the smallest and largest of several values (shapes, corpora),
  printed as a range (``102 (range 48.2 to 138)``), never in the brackets of an interval;
- ``"windows"``: the spread of a fit over sub-windows of a deterministic curve;
- ``"censored"``: a bound rather than a value (``censored="lower"``: the truth is at least ``value``;
  the interval is then ``[value, inf]``);
- ``"quadrature"``: a numerical-integration error bar;
- ``"plain"``: an interval supplied by the caller.

Crossings of a curve through a level, interpolated linearly or in log-log, are :func:`crossing`
(scanning a curve) and :func:`interp_crossing` (between two grid points).
"""
from stumplib.core.stats.crossings import crossing, interp_crossing
from stumplib.core.stats.estimate import KINDS, Estimate, mean_interval
from stumplib.core.stats.fits import (PowerLawFit, extrapolate_linear, fit_power_law, fit_replicates, ols,
                                      window_interval, window_refits)
from stumplib.core.stats.ratios import clip_to_support, ratio_of_means, student_factor, two_way_ratio
from stumplib.core.stats.resampling import (bootstrap, coverage_ratio_range, interval, resample,
                                            resample_indices, wilson_interval)

__all__ = ["Estimate", "PowerLawFit", "mean_interval", "resample_indices", "resample", "interval",
           "bootstrap", "ratio_of_means", "fit_power_law",
           "fit_replicates", "ols", "window_refits", "window_interval", "interp_crossing", "crossing",
           "wilson_interval", "extrapolate_linear", "coverage_ratio_range", "KINDS",
           "two_way_ratio", "clip_to_support", "student_factor"]
