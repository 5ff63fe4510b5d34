"""The book's machinery: everything a chapter needs besides the science.

The science (models, exact quantities, trainers, solvers, minimisers and their statistics) lives in
:mod:`stumplib.stump` and :mod:`stumplib.phase`, on the services of :mod:`stumplib.core`; neither
imports anything from here. This package turns their results into pages:

- :mod:`.page`: profiles and settings, :func:`start`, :func:`check_parameters`, :func:`table`,
  :func:`show_settings`;
- :mod:`.glue`: :func:`glue_value`, :func:`glue_estimate`, :func:`glue_verdict`;
- :mod:`.cache`: the results cache (installed as :func:`stumplib.core.memo.remember`'s store by
  :func:`start`, or explicitly by :func:`stumplib.book.cache.install`; importing this package has
  no side effect), :func:`cached`, :func:`prune_results`;
- :mod:`.registry`, :mod:`.claims`, :mod:`.audit`, :mod:`.verdicts`, :mod:`.typeset`: the claims,
  their stated rules, the verdicts computed from the data, the seed audit, the book's symbols;
- :mod:`.runs`: the committed heavy runs the chapters read (``$STUMPBOOK_RUNS``);
- :mod:`.sections`: the table rows and verdict sentences of chapter sections;
- :mod:`.style`, :mod:`.figcheck`, :mod:`.plots`: figures;
- :mod:`.sphinxext`: the Sphinx extension of the build; :mod:`.compare` and ``python -m
  stumplib.book``: maintenance.

A chapter imports ``from stumplib import book`` and calls the names re-exported here. The public ones (``__all__``):
:func:`start`, :func:`check_parameters`, :func:`settings`, :func:`show_settings`, :func:`table`,
:class:`Chapter`, :data:`PROFILES`, :func:`glue_value`, :func:`glue_estimate`, :func:`glue_verdict`,
:func:`typeset_reason`, :func:`cached`, :func:`prune_results`; the others imported here
(:func:`resolve_profile`, :data:`ENV_VAR`, :func:`results_dir`, :func:`cache_enabled`,
:func:`code_version`, :data:`CACHE_ENV`, :data:`RESULTS_ENV`) serve the book's tools.
"""
from stumplib.book.cache import (CACHE_ENV, RESULTS_ENV, cache_enabled, cached,  # noqa: F401
                                 code_version, prune_results, results_dir)
from stumplib.book.glue import glue_estimate, glue_value, glue_verdict, typeset_reason  # noqa: F401
from stumplib.book.page import (ENV_VAR, PROFILES, Chapter,  # noqa: F401
                                check_parameters, resolve_profile, settings,
                                show_settings, start, table)

__all__ = ["start", "check_parameters", "settings", "show_settings", "table", "Chapter",
           "PROFILES", "glue_value", "glue_estimate", "glue_verdict", "typeset_reason", "cached",
           "prune_results"]
