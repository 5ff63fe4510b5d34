"""The services both paper packages use: statistics, argument checks, devices, results files.

Neither science nor book: :mod:`stumplib.stump` and :mod:`stumplib.phase` build on this package,
which imports neither of them (nor :mod:`stumplib.book`).

The public names (``from stumplib.core import ...``):

- statistics (:mod:`stumplib.core.stats`): :class:`Estimate` (a value with an interval, the one
  type every reported number takes), :func:`mean_interval`, :func:`bootstrap`,
  :func:`ratio_of_means`, :func:`fit_power_law` (:class:`PowerLawFit`), :func:`crossing`;
- argument checks, each raising :class:`ValueError` that names the argument:
  :func:`check_int`, :func:`check_real`, :func:`check_prior`, :func:`check_grid`;
- devices and seeds: :func:`resolve_device`, :func:`make_generator`;
- :class:`TrainingDiverged`, the trainers' one exception;
- results files and memoisation: :func:`save_results`, :func:`load_results`, :func:`remember`;
- :func:`code_version`, the hash of the library's sources that results are tied to.

The modules (``stats``, ``validation``, ``device``, ``errors``, ``results_io``, ``memo``,
``version``) hold more, for the library's own use; those names are not part of the public API.
"""
from stumplib.core.device import make_generator, resolve_device
from stumplib.core.errors import TrainingDiverged
from stumplib.core.memo import remember
from stumplib.core.results_io import load_results, save_results
from stumplib.core.stats import (Estimate, PowerLawFit, bootstrap, crossing, fit_power_law,
                                 mean_interval, ratio_of_means)
from stumplib.core.validation import check_grid, check_int, check_prior, check_real
from stumplib.core.version import code_version

__all__ = ["Estimate", "mean_interval", "bootstrap", "ratio_of_means", "fit_power_law",
           "PowerLawFit", "crossing", "check_int", "check_real", "check_prior", "check_grid",
           "resolve_device", "make_generator", "TrainingDiverged", "save_results",
           "load_results", "remember", "code_version"]
