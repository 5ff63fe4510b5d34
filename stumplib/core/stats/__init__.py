"""Statistics: the book's one estimate-with-interval type, and every fit, bootstrap and crossing.

One module per job: :mod:`.estimate` (the type and the Student-t interval), :mod:`.resampling`
(bootstrap), :mod:`.ratios` (ratio intervals within their support), :mod:`.fits` (least squares
and power laws), :mod:`.crossings`; their names are imported here, so ``from stumplib.core.stats
import Estimate`` is the one way to import. The public ones (``__all__``): :class:`Estimate`,
:func:`mean_interval`, :func:`bootstrap`, :func:`ratio_of_means`, :func:`two_way_ratio`,
:func:`fit_power_law` (:class:`PowerLawFit`), :func:`fit_replicates`, :func:`crossing`; the others
here (:data:`KINDS`, :func:`interp_crossing`, :func:`wilson_interval`, ``ols``, ``resample``,
``interval``, ...) serve the library and the book.

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
from stumplib.core.stats.crossings import crossing, interp_crossing  # noqa: F401
from stumplib.core.stats.estimate import KINDS, Estimate, mean_interval  # noqa: F401
from stumplib.core.stats.fits import (PowerLawFit, extrapolate_linear, fit_power_law,  # noqa: F401
                                      fit_replicates, ols, window_interval, window_refits)
from stumplib.core.stats.ratios import (clip_to_support, ratio_of_means,  # noqa: F401
                                        student_factor, two_way_ratio)
from stumplib.core.stats.resampling import (bootstrap, coverage_ratio_range,  # noqa: F401
                                            interval, resample, resample_indices, wilson_interval)

__all__ = ["Estimate", "mean_interval", "bootstrap", "ratio_of_means", "two_way_ratio",
           "fit_power_law", "PowerLawFit", "fit_replicates", "crossing"]
