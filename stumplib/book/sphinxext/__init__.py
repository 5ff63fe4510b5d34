"""Sphinx extension of the book build: what the execution cache must not miss.

The book executes its notebooks with myst-nb's execution cache (``execute_notebooks: cache`` in
``_config.yml``, a jupyter-cache database in ``_build/.jupyter_cache``). That cache keys on the code
cells of a notebook only, and Sphinx re-reads (so re-executes) a notebook only when its file
changed. This extension adds the two things neither knows about:

1. **What the code cells import and read from the environment.** A *stamp* of
   :func:`stumplib.core.version.code_version` (a hash of every ``stumplib`` source file) and of the
   ``STUMPBOOK_PROFILE`` and ``STUMPBOOK_CACHE`` environment variables is kept next to the cache
   (``<cache>.stamp.json``) and in the pickled Sphinx environment. When the stamp of this build
   differs from the cache's, the cache is cleared; when it differs from the environment's, every
   notebook is marked outdated (``env-get-outdated``), so every notebook is re-read and therefore
   re-executed. A failed build does not store its stamp in the environment, so the next build
   retries every notebook (those that did execute are then reused from the cache).
2. **Cross-document glue.** A page that glues values from a notebook (``{glue:text}`chapter::key```,
   the landing page's claims table) only reads the notebook's glue store (``*.glue.json``) when the
   page is written. Whenever a notebook is re-read, every page that glues from it is re-read too,
   so it never shows values of an older execution.

3. **Executed notebooks for the reader.** Jupyter Book's download button serves the committed
   notebook, which has no outputs. Every notebook page gets a link "Download the executed notebook
   (with outputs)" under its title, and at the end of the build the executed notebooks that
   myst-nb wrote to ``_build/jupyter_execute`` are copied into the site as
   ``_executed/<docname>.ipynb``, where the link points.

4. **Claims as data.** At the end of the build the landing page's claims (the rows of
   :data:`stumplib.book.registry.REGISTRY`) are written into the site root as ``claims.json`` and
   ``claims.csv`` (:data:`CLAIM_FIELDS`; :func:`claims_rows`, :func:`write_claims`), from the glued
   values of the executed notebooks. ``python -m stumplib.book compare A B`` compares two.

At the end of every build the extension logs which notebooks were executed in this build (with
their run times) and which were reused from the cache, e.g.::

    stumpbook: executed chapters/01_setup (12.3 s); reused from cache: chapters/02_...

5. **The rules before the numbers.** Two directives render the claims registry
   (:mod:`stumplib.book.claims`) at build time on the page "How each claim is judged":
   ``{claims-rules}`` (claim, statistic, target, tolerance, rule) and ``{seed-audit}`` (the
   committed seed audit: status per seed, agreement, coverage of the intervals).

6. **The tally.** ``{claims-tally}`` on the landing page: how many claims hold, fail, are partly
   met or undecided, counted from the executed chapters' statuses when the page is written
   (:func:`claims_tally`; element ids ``claims_holds``, ``claims_fails``, ``claims_partly``,
   ``claims_undecided``; the same counts under ``"summary"`` in ``claims.json``).

Enable it with ``sphinx: extra_extensions: [stumplib.book.sphinxext]`` in ``_config.yml``. Its one
public name is :func:`setup` (Sphinx calls it); the helpers imported here (:func:`library_calls`,
:func:`claims_rows`, :func:`build_stamp`, ...) serve the book's own tools and tests.
"""
from __future__ import annotations

from typing import Any

from stumplib.book.sphinxext import claims_data, docstrings, executed, stamp
from stumplib.book.sphinxext.claims_data import (CLAIM_FIELDS, TALLY_NAMES,  # noqa: F401
                                                 claims_rows, claims_tally, glued_values,
                                                 write_claims)
from stumplib.book.sphinxext.directives import directives, library_calls  # noqa: F401
from stumplib.book.sphinxext.docstrings import numpy_sections, unbold_returns  # noqa: F401
from stumplib.book.sphinxext.executed import EXECUTED_DIR, executed_notebook_href  # noqa: F401
from stumplib.book.sphinxext.preexecute import preexecute  # noqa: F401
from stumplib.book.sphinxext.stamp import build_stamp, write_stamp  # noqa: F401

__all__ = ["setup"]


def setup(app) -> dict[str, Any]:
    """Register the extension with Sphinx: connect its handlers to the build events.

    The stamp check and cache clearing (``builder-inited``, after myst-nb's own handler), the
    outdated notebooks and the pages gluing from them (``env-get-outdated``, ``doctree-read``,
    ``env-purge-doc``, ``env-merge-info``, ``env-before-read-docs``), the link to the executed
    notebook under each notebook page's title (``doctree-resolved``), at ``build-finished`` the
    log of executed and reused notebooks, the copy of the executed notebooks into the site and
    the claims files, the tally of the landing page (``doctree-resolved``), and the
    numpy-section handling of docstrings around napoleon (``autodoc-process-docstring``); the ``claims-rules`` and ``seed-audit`` directives of the
    judging page, the ``claims-tally`` directive of the landing page and the ``library-calls``
    directive of the chapters.

    Parameters
    ----------
    app : sphinx.application.Sphinx
        The Sphinx application being set up.

    Returns
    -------
    dict
        The extension's metadata: ``version``, parallel read and write safe, ``env_version``.
    """
    rules, audit, calls, tally = directives()
    app.add_directive("claims-rules", rules)
    app.add_directive("claims-tally", tally)
    app.add_directive("seed-audit", audit)
    app.add_directive("library-calls", calls)
    stamp.connect(app)
    executed.connect(app)
    claims_data.connect(app)
    docstrings.connect(app)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True,
            "env_version": 1}
