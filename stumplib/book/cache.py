"""The results cache: one job, storing heavy results under ``results/`` keyed by their configuration
and by the library's code version, so that a change to either recomputes.

- :func:`code_version` (:mod:`stumplib.core.version`): a hash of every ``stumplib`` source file.
- :func:`cached` ``(name, config, compute)``: reload ``results/<name>-<key>.npz`` or compute and store
  it atomically (:mod:`stumplib.core.results_io`). ``STUMPBOOK_CACHE=0`` turns reloading off.
- :func:`prune_results`: delete the files of other code versions.
- :func:`cache_warnings`: the stored files that could not be reloaded (each also a
  :class:`CacheWarning` when it happens), logged to ``results/cache_warnings.log`` for the build
  record.

The science packages never import this module: they name what is worth keeping with
:func:`stumplib.core.memo.remember`, and :func:`install` (called by :func:`stumplib.book.start`;
importing :mod:`stumplib.book` installs nothing) makes this cache keep it (:func:`store`: silent, under a file lock when asked).
"""
from __future__ import annotations

import contextlib
import datetime
import hashlib
import os
import time
import warnings
from pathlib import Path
from typing import Any, Callable, Mapping

import numpy as np
import torch

from stumplib.core.version import PACKAGE, code_version
from stumplib.core.results_io import (config_key, flatten, is_flat, load_structured, read_config,
                                     save_structured, unflatten)

CACHE_ENV = "STUMPBOOK_CACHE"
RESULTS_ENV = "STUMPBOOK_RESULTS"
#: file under :func:`results_dir` listing the stored results that could not be reloaded
WARNINGS_LOG = "cache_warnings.log"


class CacheWarning(UserWarning):
    """A stored result exists for the configuration but could not be reloaded (it is recomputed)."""


def results_dir() -> Path:
    """Where results are stored.

    Returns
    -------
    Path
        ``results/`` at the repository's root, or ``$STUMPBOOK_RESULTS`` when set.
    """
    env = os.environ.get(RESULTS_ENV)
    return Path(env) if env else PACKAGE.parent / "results"


def cache_enabled() -> bool:
    """Whether :func:`cached` may reload stored results.

    Returns
    -------
    bool
        ``False`` when ``STUMPBOOK_CACHE`` is ``0``, ``false``, ``no`` or ``off``.
    """
    return os.environ.get(CACHE_ENV, "1").strip().lower() not in ("0", "false", "no", "off")


def _source_digest(fn: Callable) -> str:
    """A hash of ``fn``'s source where Python can find it (functions defined in a chapter cell
    included), so that editing the computation in a chapter recomputes too; ``""`` otherwise."""
    import inspect

    try:
        src = inspect.getsource(fn)
    except (OSError, TypeError):
        return ""
    return hashlib.sha256(src.encode()).hexdigest()[:16]


def _result_path(name: str, config: Mapping[str, Any], compute: Callable[[], Any]
                 ) -> tuple[Path, dict[str, Any]]:
    """Where :func:`cached` stores ``name`` for this configuration, and the full stored configuration."""
    if not name or not all(ch.isalnum() or ch in "_-" for ch in name):
        raise ValueError(f"name must be non-empty letters, digits, '_' or '-'; got {name!r}")
    if not isinstance(config, Mapping):
        raise ValueError(f"config must be a dict describing the computation; got {type(config).__name__}")
    full = {"config": dict(config), "code": code_version(), "compute": _source_digest(compute)}
    key = hashlib.sha256(config_key(full).encode()).hexdigest()[:16]
    return results_dir() / f"{name}-{key}.npz", full


def cached(name: str, config: Mapping[str, Any], compute: Callable[[], Any], *,
           verbose: bool = True) -> Any:
    """Reload ``results/<name>-<key>.npz`` or compute and store it.

    Parameters
    ----------
    name : a short name, ``chNN_what`` by convention (letters, digits, ``_`` and ``-``).
    config : everything the result depends on besides the code (JSON-serialisable values; the
        profile belongs here when the settings do not already pin the result).
    compute : a function returning the result; called only when nothing matches. Either a flat
        dict ``{array name: array}`` or a structured result: dataclasses, dicts, lists and tuples
        nesting arrays, torch tensors, numbers, strings and ``None`` (see
        :func:`stumplib.core.results_io.flatten`); the cache flattens and rebuilds it itself.
    verbose : print one line saying whether the result was reloaded or computed (chapters pass
        ``False``: no cache log on the page).

    Returns
    -------
    The result as a reload gives it, whether it was just computed or reloaded: a flat dict as a dict
    of numpy arrays; a structured result rebuilt with its dataclasses, tensors as numpy arrays. The
    key is a hash of the configuration, of :func:`code_version` and of ``compute``'s own source
    (where it can be found), so a smoke run never overwrites a quick one, and a change to the
    library or to the chapter's computing function recomputes.
    """
    path, full = _result_path(name, config, compute)
    if cache_enabled():
        got = load_structured(path, full)
        if got is not None:
            if verbose:
                print(f"{name}: reloaded {path.name}")
            return got
        if path.exists():
            _warn_not_reloaded(path)
    t0 = time.time()
    result = compute()
    save_structured(path, result, full)
    if verbose:
        print(f"{name}: computed in {time.time() - t0:.1f} s, stored as {path.name}")
    if is_flat(result):
        return {k: np.asarray(v.detach().cpu().numpy() if isinstance(v, torch.Tensor) else v)
                for k, v in result.items()}
    return unflatten(*flatten(result))  # exactly what a reload returns


def _warn_not_reloaded(path: Path) -> None:
    """Warn (:class:`CacheWarning`) and log to :data:`WARNINGS_LOG` that ``path`` exists for this
    configuration but could not be reloaded, with why."""
    why = ("unreadable (not a results file, or a truncated one)" if read_config(path) is None
           else "its contents could not be rebuilt (a stored class that no longer accepts its fields)")
    msg = f"{path.name}: stored result not reloaded: {why}; recomputing"
    warnings.warn(msg, CacheWarning, stacklevel=3)
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S")
    try:
        with open(path.parent / WARNINGS_LOG, "a", encoding="utf-8") as fh:
            fh.write(f"{stamp}\t{code_version()}\t{path.name}\t{why}\n")
    except OSError:  # pragma: no cover  (the warning itself was given)
        pass


def cache_warnings(current_only: bool = True) -> list[dict[str, str]]:
    """The stored results that :func:`cached` could not reload, as logged in :data:`WARNINGS_LOG`.

    Parameters
    ----------
    current_only : bool
        Only those logged by the current :func:`code_version` (the build being recorded).

    Returns
    -------
    list of dict
        One ``{"time", "code", "file", "why"}`` per event (UTC time), oldest first.
    """
    log = results_dir() / WARNINGS_LOG
    if not log.is_file():
        return []
    rows = []
    for line in log.read_text(encoding="utf-8").splitlines():
        parts = line.split("\t")
        if len(parts) == 4:
            rows.append(dict(zip(("time", "code", "file", "why"), parts)))
    if current_only:
        current = code_version()
        rows = [r for r in rows if r["code"] == current]
    return rows


def prune_results(*, dry_run: bool = False) -> list[Path]:
    """Delete the files under :func:`results_dir` that :func:`cached` can never reload: results
    made by another :func:`code_version` (every library edit leaves such files behind), unreadable
    files, temporary files of interrupted writes, and the lock files of :func:`store` that no
    process holds now (one is left behind per result computed under a lock).

    Parameters
    ----------
    dry_run : only list them.

    Returns
    -------
    list of Path: the files deleted (or, with ``dry_run``, those that would be).
    """
    root, current = results_dir(), code_version()
    if not root.is_dir():
        return []
    stale = sorted(p for p in root.glob("*.tmp") if p.is_file())
    for p in sorted(root.glob("*.npz")):
        stored = read_config(p)
        if stored is None or stored.get("code") != current:
            stale.append(p)
    stale += [p for p in sorted(root.glob("*.lock")) if p.is_file() and not _held(p)]
    if not dry_run:
        for p in stale:
            p.unlink(missing_ok=True)
    return stale


def _held(path: Path) -> bool:
    """Whether a process holds :func:`lock`'s lock on ``path`` now (``False`` where POSIX locks
    do not exist)."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover
        return False
    try:
        with open(path, "a") as fh:
            try:
                fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return True
            fcntl.flock(fh, fcntl.LOCK_UN)
    except OSError:  # pragma: no cover  (unreadable: not ours to judge)
        return True
    return False


@contextlib.contextmanager
def lock(name: str):
    """An exclusive lock on ``results/<name>.lock`` (POSIX; a no-op elsewhere): the second of two
    processes holding the same name waits for the first.

    Parameters
    ----------
    name : str
        The lock's name (:func:`store` uses the result file's stem, ``<name>-<key>``, so that only
        processes computing the same result wait for each other).

    Yields
    ------
    None
    """
    try:
        import fcntl
    except ImportError:  # pragma: no cover
        yield
        return
    d = results_dir()
    d.mkdir(parents=True, exist_ok=True)
    with open(d / f"{name}.lock", "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def store(name: str, config: Mapping[str, Any], compute: Callable[[], Any], *,
          exclusive: bool = False) -> Any:
    """The store :func:`install` hands to :func:`stumplib.core.memo.install`: :func:`cached`,
    silent (no log on the page), under :func:`lock` when ``exclusive``.

    Parameters
    ----------
    name, config, compute : as for :func:`cached`.
    exclusive : bool
        Compute under a file lock named after this result's file (``results/<name>-<key>.lock``,
        the key of :func:`cached`): a second process asking for the same result waits for the
        first and then reloads it; processes asking for other configurations of ``name`` (other
        seeds, say) do not wait.

    Returns
    -------
    Any
        The result, as :func:`cached` returns it.
    """
    if not exclusive:
        return cached(name, config, compute, verbose=False)
    path, _ = _result_path(name, config, compute)
    with lock(path.stem):
        return cached(name, config, compute, verbose=False)


def install() -> None:
    """Make :func:`stumplib.core.memo.remember` keep results in this cache (:func:`store`)."""
    from stumplib.core import memo

    memo.install(store)
