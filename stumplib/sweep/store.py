"""The store of a sweep: one file, written by its driver alone, task by task, atomically.

A run's store is the file its script names with ``--out``:

- ``.npz`` (numeric results): the entry ``manifest`` (JSON text) and, for every completed task, its
  arrays under ``<task id>/<name>``;
- ``.json`` (text results, the seed audit): ``{"sweep": {"manifest": ..., "results": {task id:
  result}}}`` plus the top-level keys of the caller's *view* (what readers of the old layout read).

The manifest holds the store's ``kind``, every recorded parameter (:mod:`.params`), one entry per
driver run (command, commit, machine, start and end, the cluster, its counts) and one entry per
task (``status`` ``"done"`` or ``"failed"``, ``attempts``, ``errors``, ``traceback``, ``seconds``,
``worker``, the run that wrote it). Every write goes to a temporary file next to the store, is
flushed to disk and renamed over the store (``os.replace``), so a killed driver leaves the last
complete store (:func:`.files.atomic_write`). The driver holds ``<store>.lock``
(:class:`.files.DriverLock`) from :meth:`Store.open` to :meth:`Store.close`; a second driver on the
same store is refused with :class:`.files.StoreLocked`, which names the holder.
"""
from __future__ import annotations

import io
import json
import os
import re
from pathlib import Path
from typing import Any, Callable, Mapping

import numpy as np

from stumplib.sweep.files import DriverLock, atomic_write
from stumplib.sweep.params import check_resume, decode, encode
from stumplib.sweep.provenance import now

#: the layout version every manifest records
FORMAT = "stumplib.sweep/1"
#: what a task id may contain (it names entries of the store)
TASK_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:+-]*")


class StoreError(ValueError):
    """A file that is not a store of this kind (another kind, the old layout, a damaged file)."""


def read_store(path: str | os.PathLike) -> tuple[dict[str, Any], dict[str, Any]]:
    """Read a store without locking it (writes replace the whole file, so a read is consistent).

    Parameters
    ----------
    path : path-like
        A ``.npz`` or ``.json`` store.

    Returns
    -------
    manifest : dict
        The manifest (parameters still encoded: :func:`.params.decode` them).
    results : dict
        ``{task id: result}``: for ``.npz`` a ``{name: array}`` dict per task, for ``.json`` the
        stored JSON value.

    Raises
    ------
    StoreError
        The file is not a store (for example a file of the scripts' old layout).
    FileNotFoundError
        There is no such file.
    """
    p = Path(path)
    fmt = _format(p)
    try:
        if fmt == "npz":
            with np.load(p, allow_pickle=False) as f:
                if "manifest" not in f.files:
                    raise StoreError(f"{p} is not a sweep store (no manifest): a file of the old "
                                     "layout? Convert it with scripts/import_legacy_run.py")
                manifest = json.loads(str(f["manifest"]))
                results: dict[str, Any] = {}
                for k in f.files:
                    if "/" in k:
                        tid, name = k.split("/", 1)
                        results.setdefault(tid, {})[name] = f[k]
        else:
            data = json.loads(p.read_text())
            if not isinstance(data, dict) or "sweep" not in data:
                raise StoreError(f"{p} is not a sweep store (no 'sweep' entry): a file of the old "
                                 "layout?")
            manifest, results = data["sweep"]["manifest"], data["sweep"].get("results", {})
    except (ValueError, OSError, KeyError) as e:
        if isinstance(e, (StoreError, FileNotFoundError)):
            raise
        raise StoreError(f"{p}: unreadable store ({type(e).__name__}: {e})") from e
    if manifest.get("format") != FORMAT:
        raise StoreError(f"{p}: layout {manifest.get('format')!r}, this code reads {FORMAT!r}")
    return manifest, results


def _format(path: Path) -> str:
    if path.suffix not in (".npz", ".json"):
        raise ValueError(f"out: a store is a .npz (numeric results) or .json (text) file; got "
                         f"{str(path)!r}")
    return path.suffix[1:]


class Store:
    """A sweep's store, open for writing by one driver (:mod:`stumplib.sweep.store`).

    Parameters
    ----------
    path : path-like
        The store file (``.npz`` or ``.json``); created by :meth:`open` when absent.
    kind : str
        What the store holds (``"phase_minimisers"``); an existing store of another kind is refused.
    params : Mapping[str, Any]
        Every parameter the tasks depend on; an existing store must record exactly these
        (:func:`.params.check_resume`).
    run : Mapping[str, str] or None, optional
        This driver's provenance (:func:`.provenance.describe_run`), recorded in the manifest.
    view : callable or None, optional
        For ``.json`` stores: called with the store at every write, returns top-level keys written
        beside ``"sweep"`` (a summary in the layout older readers expect).
    """

    def __init__(self, path: str | os.PathLike, *, kind: str, params: Mapping[str, Any],
                 run: Mapping[str, str] | None = None,
                 view: Callable[["Store"], Mapping[str, Any]] | None = None) -> None:
        self.path = Path(path)
        self.format = _format(self.path)
        if view is not None and self.format != "json":
            raise ValueError("view: only a .json store has top-level keys besides the sweep")
        self.kind = kind
        self.params = dict(params)
        encode(self.params, "params")  # refuse what cannot be recorded before any work
        self.run = dict(run or {})
        self.view = view
        self.manifest: dict[str, Any] = {}
        self.results: dict[str, Any] = {}
        self.run_index = -1
        self._lock = DriverLock(self.path)

    # -- opening and closing ------------------------------------------------------------------
    def open(self) -> "Store":
        """Take the lock, read the store (checking its kind and parameters) or start it, and
        record this run.

        Returns
        -------
        Store
            This store, open.

        Raises
        ------
        StoreLocked
            Another driver writes the store.
        StoreError
            The file is not a store, or one of another kind.
        ParameterMismatch
            The store records other parameters (the message names the first).
        """
        self.path.parent.mkdir(parents=True, exist_ok=True)  # a new store in a new folder
        self._lock.acquire(self.run.get("command", ""))
        try:
            for stale in self.path.parent.glob(f".{self.path.name}.tmp-*"):
                stale.unlink()  # a killed driver's unfinished write (the lock is ours)
            if self.path.exists():
                manifest, results = read_store(self.path)
                if manifest.get("kind") != self.kind:
                    raise StoreError(f"{self.path} holds {manifest.get('kind')!r} results, not "
                                     f"{self.kind!r}")
                check_resume(decode(manifest["params"]), self.params, where=str(self.path))
            else:
                manifest = {"format": FORMAT, "kind": self.kind, "params": encode(self.params),
                            "runs": [], "tasks": {}}
                results = {}
            manifest["runs"].append(dict(self.run, opened=now(), closed=None))
            self.manifest, self.results = manifest, results
            self.run_index = len(manifest["runs"]) - 1
            self.save()
        except BaseException:
            self._lock.release()
            raise
        return self

    def close(self, summary: Mapping[str, Any] | None = None) -> None:
        """Record the end of this run (and its ``summary``), write the store, release the lock.

        Parameters
        ----------
        summary : Mapping[str, Any] or None, optional
            Counts to record with this run (JSON types).
        """
        if not self._lock.held:
            return
        try:
            self.manifest["runs"][self.run_index].update(dict(summary or {}), closed=now())
            self.save()
        finally:
            self._lock.release()

    def __enter__(self) -> "Store":
        return self.open()

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # -- tasks --------------------------------------------------------------------------------
    def status(self, task_id: str) -> str | None:
        """A task's recorded status.

        Parameters
        ----------
        task_id : str
            The task.

        Returns
        -------
        str or None
            ``"done"``, ``"failed"``, or ``None`` when the store has no record of it.
        """
        return self.manifest.get("tasks", {}).get(task_id, {}).get("status")

    def put(self, task_id: str, result: Any, info: Mapping[str, Any]) -> None:
        """Record a completed task and write the store.

        Parameters
        ----------
        task_id : str
            The task (letters, digits and ``_.:+-``).
        result : Any
            For ``.npz``: a mapping of names (no ``/``) to arrays (numeric, boolean or text); for
            ``.json``: any JSON value.
        info : Mapping[str, Any]
            What the driver knows of the task (attempts, seconds, worker, errors of failed tries).
        """
        self._check_id(task_id)
        if self.format == "npz":
            if not isinstance(result, Mapping):
                raise TypeError(f"task {task_id}: a .npz store takes a mapping of arrays; got "
                                f"{type(result).__name__}")
            arrays = {}
            for k, v in result.items():
                a = np.asarray(v)
                if "/" in str(k) or a.dtype.kind not in "biufU":
                    raise TypeError(f"task {task_id}: entry {k!r} ({a.dtype}) cannot be stored")
                arrays[str(k)] = a
            result = arrays
        else:
            json.dumps(result)  # refuse what cannot be stored before recording it
        self.results[task_id] = result
        self._record(task_id, info, "done")

    def fail(self, task_id: str, info: Mapping[str, Any]) -> None:
        """Record a task that failed (with its errors) and write the store.

        Parameters
        ----------
        task_id : str
            The task.
        info : Mapping[str, Any]
            Attempts, the error text of each, the last traceback.
        """
        self._check_id(task_id)
        self.results.pop(task_id, None)
        self._record(task_id, info, "failed")

    def _check_id(self, task_id: str) -> None:
        if not isinstance(task_id, str) or not TASK_ID.fullmatch(task_id):
            raise ValueError(f"task id must match {TASK_ID.pattern}; got {task_id!r}")

    def _record(self, task_id: str, info: Mapping[str, Any], status: str) -> None:
        old = self.manifest["tasks"].get(task_id, {})
        entry = dict(info, status=status, run=self.run_index, finished=now())
        entry["attempts"] = int(old.get("attempts", 0)) + int(info.get("attempts", 1))
        if old.get("errors"):  # earlier runs' failed tries stay on record
            entry["errors"] = list(old["errors"]) + list(info.get("errors", []))
        self.manifest["tasks"][task_id] = entry
        self.save()

    # -- writing ------------------------------------------------------------------------------
    def save(self) -> None:
        """Write the whole store atomically (:func:`atomic_write`); only the lock's holder may.

        Raises
        ------
        RuntimeError
            The store is not open (its lock is not held).
        """
        if not self._lock.held:
            raise RuntimeError(f"{self.path}: not open; only the driver holding its lock writes it")
        if self.format == "npz":
            arrays = {"manifest": np.asarray(json.dumps(self.manifest))}
            for tid, res in self.results.items():
                arrays.update({f"{tid}/{k}": v for k, v in res.items()})
            buf = io.BytesIO()
            np.savez_compressed(buf, **arrays)
            atomic_write(self.path, lambda fh: fh.write(buf.getvalue()))
        else:
            data = dict(self.view(self) if self.view else {})
            data["sweep"] = {"manifest": self.manifest, "results": self.results}
            text = json.dumps(data, indent=1, ensure_ascii=False) + "\n"
            atomic_write(self.path, lambda fh: fh.write(text.encode()))
