"""The execution cache's stamp and the pages that depend on a re-executed notebook.

A *stamp* of :func:`stumplib.core.version.code_version` (a hash of every ``stumplib`` source file)
and of the ``STUMPBOOK_PROFILE`` and ``STUMPBOOK_CACHE`` environment variables is kept next to the
execution cache (``<cache>.stamp.json``) and in the pickled Sphinx environment: when it differs from
the cache's, the cache is cleared; when it differs from the environment's, every notebook is marked
outdated, so every notebook is re-read and re-executed. Whenever a notebook is re-read, every page
that glues from it is re-read too. At the end of every build the notebooks executed and reused are
logged.
"""
from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path
from typing import Any

from sphinx.util import logging

logger = logging.getLogger(__name__)

STAMP_ENV_ATTR = "stumpbook_exec_stamp"


GLUE_REFS_ENV_ATTR = "stumpbook_glue_refs"


def build_stamp() -> dict[str, str]:
    """What an execution depends on besides the notebook's code cells.

    Returns
    -------
    dict of str
        ``"code_version"`` (:func:`stumplib.book.code_version`, a hash of every ``stumplib``
        source file), ``"profile"`` (``$STUMPBOOK_PROFILE``, ``""`` when unset) and ``"cache"``
        (``"on"`` or ``"off"``, from :func:`stumplib.book.cache_enabled`).
    """
    from stumplib import book  # imported here, not at Sphinx start-up
    from stumplib.book.runs import AUDIT_NAME, run_file

    return {
        "code_version": book.code_version(),
        "profile": os.environ.get(book.ENV_VAR, ""),
        "cache": "on" if book.cache_enabled() else "off",
        # the chapters read the committed seed audit (claims.glue_seed_agreement)
        "seed_audit": file_digest(run_file(AUDIT_NAME)),
    }


def file_digest(path: Path) -> str:
    """A short hash of a file's bytes.

    Parameters
    ----------
    path : Path
        The file.

    Returns
    -------
    str
        16 hex digits, or ``"none"`` when the file does not exist.
    """
    import hashlib

    return hashlib.sha256(path.read_bytes()).hexdigest()[:16] if path.is_file() else "none"


def cache_path(app) -> Path:
    """The build's execution cache folder (myst-nb's setting, else ``_build/.jupyter_cache``).

    Parameters
    ----------
    app : sphinx.application.Sphinx
        The running build.

    Returns
    -------
    Path
    """
    cfg = getattr(app.env, "mystnb_config", None)
    p = getattr(cfg, "execution_cache_path", "") if cfg is not None else ""
    return Path(p) if p else Path(app.outdir).parent / ".jupyter_cache"


def stamp_file(cache: Path) -> Path:
    """Where the stamp of the execution cache ``cache`` is kept.

    Parameters
    ----------
    cache : Path
        The execution cache folder.

    Returns
    -------
    Path
        ``<cache>.stamp.json`` beside it.
    """
    return cache.with_name(cache.name + ".stamp.json")


def read_json(path: Path) -> Any:
    """A JSON file's contents, or ``None`` when it is missing or unreadable.

    Parameters
    ----------
    path : Path
        The file.

    Returns
    -------
    Any
    """
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def uses_cache(app) -> bool:
    """Whether the build executes through the execution cache (``execute_notebooks: cache``).

    Parameters
    ----------
    app : sphinx.application.Sphinx
        The running build.

    Returns
    -------
    bool
    """
    cfg = getattr(app.env, "mystnb_config", None)
    return getattr(cfg, "execution_mode", None) == "cache"


def write_stamp(cache: str | os.PathLike) -> Path:
    """Store this process's :func:`build_stamp` as the stamp of the execution cache ``cache``, so
    that the next build (same library, profile and cache setting) keeps the cache's outputs.

    Parameters
    ----------
    cache : the jupyter-cache folder (``_build/.jupyter_cache``).

    Returns
    -------
    Path : the stamp file.
    """
    sf = stamp_file(Path(cache))
    sf.parent.mkdir(parents=True, exist_ok=True)
    tmp = sf.with_suffix(".tmp")
    tmp.write_text(json.dumps(build_stamp(), indent=1))
    os.replace(tmp, sf)
    return sf


def _builder_inited(app) -> None:
    """Compare this build's stamp with the execution cache's; clear the cache when they differ."""
    app._stumpbook_t0 = time.time()
    app._stumpbook_stamp = stamp = build_stamp()
    if not uses_cache(app):
        return
    cache = cache_path(app)
    sf = stamp_file(cache)
    old = read_json(sf)
    if old != stamp:
        if cache.exists():
            why = ", ".join(f"{k} {old.get(k)!r} -> {v!r}" for k, v in stamp.items()
                            if old.get(k) != v) if isinstance(old, dict) else "no stamp"
            logger.info(f"stumpbook: clearing the execution cache {cache} ({why})")
            shutil.rmtree(cache)
        write_stamp(cache)


def is_notebook(env, docname: str) -> bool:
    """Whether the document ``docname`` is a notebook.

    Parameters
    ----------
    env : sphinx.environment.BuildEnvironment
        The build environment.
    docname : str
        The document's name.

    Returns
    -------
    bool
    """
    try:
        return str(env.doc2path(docname)).endswith(".ipynb")
    except Exception:  # noqa: BLE001 - a doc Sphinx no longer knows
        return False


def _env_get_outdated(app, env, added, changed, removed) -> list[str]:
    """Every notebook when the stamp changed; every page gluing from a notebook that is re-read."""
    stamp = getattr(app, "_stumpbook_stamp", None) or build_stamp()
    old = getattr(env, STAMP_ENV_ATTR, None)
    extra: set[str] = set()
    if old is not None and old != stamp:
        extra = {d for d in env.found_docs if is_notebook(env, d)}
        why = ", ".join(k for k in stamp if old.get(k) != stamp[k])
        logger.info(f"stumpbook: {why} changed: re-executing {len(extra)} notebooks")
    # stored in the environment, which Sphinx pickles only once every document was read
    setattr(env, STAMP_ENV_ATTR, stamp)
    reread = set(added) | set(changed) | extra
    refs: dict[str, set[str]] = getattr(env, GLUE_REFS_ENV_ATTR, {})
    followers = {doc for doc, srcs in refs.items() if srcs & reread and doc in env.found_docs}
    if followers - reread:
        logger.info("stumpbook: re-reading pages that glue from re-read notebooks: "
                    + ", ".join(sorted(followers - reread)))
    return sorted(extra | followers)


def _doctree_read(app, doctree) -> None:
    """Record which documents this one glues from (cross-document glue references)."""
    from myst_nb.ext.glue.utils import PendingGlueReference

    env = app.env
    srcs = {n.refdoc for n in doctree.findall(PendingGlueReference)
            if getattr(n, "refdoc", None) and n.refdoc != env.docname}
    refs = getattr(env, GLUE_REFS_ENV_ATTR, None)
    if refs is None:
        refs = {}
        setattr(env, GLUE_REFS_ENV_ATTR, refs)
    if srcs:
        refs[env.docname] = srcs
    else:
        refs.pop(env.docname, None)


def _env_purge_doc(app, env, docname) -> None:
    getattr(env, GLUE_REFS_ENV_ATTR, {}).pop(docname, None)


def _env_merge_info(app, env, docnames, other) -> None:
    refs = getattr(env, GLUE_REFS_ENV_ATTR, None)
    if refs is None:
        refs = {}
        setattr(env, GLUE_REFS_ENV_ATTR, refs)
    for d in docnames:
        if d in getattr(other, GLUE_REFS_ENV_ATTR, {}):
            refs[d] = getattr(other, GLUE_REFS_ENV_ATTR)[d]


def _env_before_read_docs(app, env, docnames) -> None:
    app._stumpbook_read = list(docnames)


def _build_finished(app, exception) -> None:
    """Log which notebooks this build executed (with run times) and which came from the cache."""
    if exception is not None:
        return
    try:
        from myst_nb.sphinx_ import NbMetadataCollector
    except ImportError:  # pragma: no cover
        return
    t0 = getattr(app, "_stumpbook_t0", 0.0)
    ran, reused = [], []
    for d in getattr(app, "_stumpbook_read", []):
        try:
            data = NbMetadataCollector.get_exec_data(app.env, d)
        except KeyError:
            data = None
        if not data:
            continue
        if (data.get("mtime") or 0) >= t0 and data.get("method") != "off":
            ran.append(f"{d} ({data.get('runtime') or 0:.1f} s)")
        else:
            reused.append(d)
    logger.info("stumpbook: executed " + (", ".join(ran) or "no notebook")
                + "; reused from cache: " + (", ".join(reused) or "none")
                + f"; build took {time.time() - t0:.1f} s")



def connect(app) -> None:
    """Connect the stamp check, the outdated notebooks, the pages gluing from them and the log of
    executed notebooks to the build's events.

    Parameters
    ----------
    app : sphinx.application.Sphinx
        The application being set up.
    """
    # after myst-nb's own builder-inited handler, which resolves the execution cache path
    app.connect("builder-inited", _builder_inited, priority=900)
    app.connect("env-get-outdated", _env_get_outdated)
    app.connect("env-before-read-docs", _env_before_read_docs)
    app.connect("doctree-read", _doctree_read)
    app.connect("env-purge-doc", _env_purge_doc)
    app.connect("env-merge-info", _env_merge_info)
    app.connect("build-finished", _build_finished)
