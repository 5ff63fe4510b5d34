"""Results files: written atomically, reloaded only when their configuration matches.

Two layers:

- :func:`save_results` / :func:`load_results`: a flat ``{name: array}`` dict and its configuration
  in one ``.npz`` file.
- :func:`flatten` / :func:`unflatten` turn a *structured* result (dataclasses, dicts, lists and
  tuples nesting arrays, tensors and plain Python values) into such a flat dict plus a JSON layout
  and back; :func:`save_structured` / :func:`load_structured` store and reload one, and still read
  files written by :func:`save_results` (as flat dicts). :func:`stumplib.book.cached` stores
  through them, so a module's result type needs no ``arrays()`` / ``from_arrays()`` pair and no key
  strings encoding its structure.
"""
from __future__ import annotations

import dataclasses
import importlib
import json
import os
import tempfile
import zipfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

#: reserved entry names of a results file: its configuration and, for structured results, the layout
CONFIG_ENTRY, LAYOUT_ENTRY = "__config__", "__layout__"


def _check_path(path: Any) -> Path:
    if not isinstance(path, (str, os.PathLike)):
        raise ValueError(f"path must be a str or os.PathLike ending in .npz; got {path!r}")
    p = Path(path)
    if p.suffix != ".npz":
        raise ValueError(f"path must end in .npz; got {str(p)!r}")
    return p


def _check_config(config: Any) -> None:
    if not isinstance(config, dict):
        raise ValueError(f"config must be a dict describing the computation; got {type(config).__name__}")


def config_key(config: dict[str, Any]) -> str:
    """A canonical JSON string of a configuration (sorted keys; tuples become lists).

    Parameters
    ----------
    config : a JSON-serialisable mapping.

    Returns
    -------
    str
    """
    _check_config(config)
    return json.dumps(config, sort_keys=True, default=lambda o: o.tolist() if hasattr(o, "tolist") else str(o))


def save_results(path: str | os.PathLike, arrays: dict[str, np.ndarray], config: dict[str, Any]) -> Path:
    """Write ``arrays`` and ``config`` to an ``.npz`` file atomically.

    The data go to a temporary file in the same folder, which then replaces ``path`` in one
    ``os.replace``: an interrupt leaves either the old file or the new one, never half of one.

    Parameters
    ----------
    path : the ``.npz`` file to write.
    arrays : name -> array.
    config : the JSON-serialisable configuration the arrays were computed from.

    Returns
    -------
    pathlib.Path of the written file.
    """
    path = _check_path(path)
    _check_config(config)
    if not isinstance(arrays, dict) or not all(isinstance(k, str) for k in arrays):
        raise ValueError(f"arrays must be a dict of name -> array; got {type(arrays).__name__}")
    reserved = sorted({CONFIG_ENTRY, LAYOUT_ENTRY} & set(arrays))
    if reserved:
        raise ValueError(f"arrays must not use the reserved keys {CONFIG_ENTRY!r}, {LAYOUT_ENTRY!r}; "
                         f"got {reserved}")
    return _write(path, {k: np.asarray(v) for k, v in arrays.items()}, config)


def _write(path: Path, arrays: dict[str, np.ndarray], config: dict[str, Any]) -> Path:
    """Write ``arrays`` (reserved entries included) and ``config`` atomically."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            np.savez(fh, **{CONFIG_ENTRY: np.array(config_key(config))}, **arrays)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return path


def load_results(path: str | os.PathLike, config: dict[str, Any]) -> dict[str, np.ndarray] | None:
    """Reload arrays saved by :func:`save_results` if the file exists and its configuration equals
    ``config``; otherwise ``None`` (the caller recomputes). Unreadable files also give ``None``.

    Parameters
    ----------
    path : the ``.npz`` file.
    config : the configuration the caller needs.

    Returns
    -------
    dict of numpy arrays, or ``None``.
    """
    path = _check_path(path)
    _check_config(config)
    if not path.exists():
        return None
    try:
        with np.load(path, allow_pickle=False) as data:
            if str(data[CONFIG_ENTRY]) != config_key(config):
                return None
            return {k: data[k] for k in data.files if k != CONFIG_ENTRY}
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile):
        return None


def read_config(path: str | os.PathLike) -> dict[str, Any] | None:
    """The configuration stored in a results file (as parsed JSON), or ``None`` if it cannot be read.

    Parameters
    ----------
    path : a ``.npz`` file written by :func:`save_results` or :func:`save_structured`.

    Returns
    -------
    dict or None
    """
    path = _check_path(path)
    try:
        with np.load(path, allow_pickle=False) as data:
            got = json.loads(str(data[CONFIG_ENTRY]))
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile):
        return None
    return got if isinstance(got, dict) else None


# ------------------------------------------------------------------------------ structured results
_SCALARS = (bool, int, float, str, type(None))


def is_flat(obj: Any) -> bool:
    """Whether ``obj`` is a flat result: a dict of ``str`` -> array-like whose values are neither
    containers of structure (dicts, dataclasses, ``None``) nor ragged (``np.asarray`` must give a
    non-object array). Flat results are stored entry by entry and reload as dicts of arrays.

    Parameters
    ----------
    obj : any result.

    Returns
    -------
    bool
    """
    if not isinstance(obj, Mapping) or not all(isinstance(k, str) for k in obj):
        return False
    for v in obj.values():
        if v is None or isinstance(v, Mapping) or _is_dataclass(v):
            return False
        try:
            if np.asarray(_numpy(v)).dtype == object:
                return False
        except (ValueError, TypeError):
            return False
    return True


def _is_dataclass(obj: Any) -> bool:
    return dataclasses.is_dataclass(obj) and not isinstance(obj, type)


def _numpy(v: Any) -> Any:
    """A torch tensor as a numpy array (on the CPU); anything else unchanged."""
    if type(v).__module__.startswith("torch") and hasattr(v, "detach"):
        return v.detach().cpu().numpy()
    return v


def _encode(obj: Any, arrays: dict[str, np.ndarray], path: str) -> Any:
    """The JSON layout of ``obj``; its arrays go to ``arrays`` under their dotted path."""
    obj = _numpy(obj)
    if isinstance(obj, (np.ndarray, np.generic)):
        if obj.dtype == object:
            raise ValueError(f"result{path} is an object array, which cannot be stored")
        name = path[1:] or "root"
        if name in arrays:
            raise ValueError(f"result{path}: two entries would both be stored as {name!r} (a dict key "
                             f"with '.'); rename one")
        arrays[name] = np.asarray(obj)
        return {"__array__": name, "scalar": isinstance(obj, np.generic)}
    if isinstance(obj, _SCALARS):
        return obj
    if _is_dataclass(obj):
        cls = type(obj)
        fields = {f.name: _encode(getattr(obj, f.name), arrays, f"{path}.{f.name}")
                  for f in dataclasses.fields(obj) if f.init}
        return {"__dataclass__": f"{cls.__module__}:{cls.__qualname__}", "fields": fields}
    if isinstance(obj, Mapping):
        if not all(isinstance(k, str) for k in obj):
            raise ValueError(f"result{path}: dict keys must be strings; got {list(obj)[:5]}")
        return {"__dict__": {k: _encode(v, arrays, f"{path}.{k}") for k, v in obj.items()}}
    if isinstance(obj, (list, tuple)):
        items = [_encode(v, arrays, f"{path}.{i}") for i, v in enumerate(obj)]
        return {"__tuple__": items} if isinstance(obj, tuple) else {"__list__": items}
    raise ValueError(f"result{path} has type {type(obj).__name__}, which cannot be stored (arrays, "
                     f"tensors, numbers, strings, None, lists, tuples, dicts and dataclasses can)")


def flatten(obj: Any) -> tuple[dict[str, np.ndarray], Any]:
    """Split a structured result into its arrays and a JSON-serialisable layout.

    Parameters
    ----------
    obj : arrays, torch tensors (stored as numpy arrays), numpy scalars, ``bool``/``int``/``float``/
        ``str``/``None``, and dataclass instances, dicts (string keys), lists and tuples
        of these, nested to any depth.

    Returns
    -------
    (arrays, layout) : the arrays by dotted path (``"runs.0.beta"``) and the layout that
    :func:`unflatten` rebuilds ``obj`` from.
    """
    arrays: dict[str, np.ndarray] = {}
    return arrays, _encode(obj, arrays, "")


def _dataclass_type(name: str) -> type:
    module, _, qual = name.partition(":")
    cls: Any = importlib.import_module(module)
    for part in qual.split("."):
        cls = getattr(cls, part)
    if not dataclasses.is_dataclass(cls):
        raise ValueError(f"{name} is not a dataclass")
    return cls


def unflatten(arrays: Mapping[str, np.ndarray], layout: Any) -> Any:
    """Rebuild a result from :func:`flatten`'s output: arrays as numpy arrays (tensors come back as
    arrays), numpy scalars as numpy scalars, dataclasses, dicts, lists and tuples as themselves.

    Parameters
    ----------
    arrays : the arrays by dotted path.
    layout : the layout.

    Returns
    -------
    the result.
    """
    if isinstance(layout, list):  # JSON has no tuples; the layout's own lists are always wrapped
        raise ValueError("layout holds a bare list; it was not made by flatten")
    if not isinstance(layout, dict):
        return layout
    if "__array__" in layout:
        a = arrays[layout["__array__"]]
        return a[()] if layout.get("scalar") else a
    if "__dataclass__" in layout:
        cls = _dataclass_type(layout["__dataclass__"])
        return cls(**{k: unflatten(arrays, v) for k, v in layout["fields"].items()})
    if "__dict__" in layout:
        return {k: unflatten(arrays, v) for k, v in layout["__dict__"].items()}
    if "__tuple__" in layout:
        return tuple(unflatten(arrays, v) for v in layout["__tuple__"])
    return [unflatten(arrays, v) for v in layout["__list__"]]


def save_structured(path: str | os.PathLike, obj: Any, config: dict[str, Any]) -> Path:
    """Write a result atomically with its configuration: a flat dict (:func:`is_flat`) entry by
    entry, exactly as :func:`save_results`; anything else through :func:`flatten`.

    Parameters
    ----------
    path : the ``.npz`` file.
    obj : the result (see :func:`flatten`).
    config : what it was computed from (JSON-serialisable).

    Returns
    -------
    Path
    """
    path = _check_path(path)
    _check_config(config)
    if is_flat(obj):
        return save_results(path, {k: np.asarray(_numpy(v)) for k, v in obj.items()}, config)
    arrays, layout = flatten(obj)
    arrays[LAYOUT_ENTRY] = np.array(json.dumps(layout))
    return _write(path, arrays, config)


def load_structured(path: str | os.PathLike, config: dict[str, Any]) -> Any | None:
    """Reload what :func:`save_structured` (or :func:`save_results`) wrote, if its configuration
    equals ``config``; ``None`` when the file is absent, unreadable, made from another
    configuration, or holds a dataclass that no longer exists or accepts its fields.

    Parameters
    ----------
    path : the ``.npz`` file.
    config : the configuration the result must have been computed from.

    Returns
    -------
    the result, or None
    """
    data = load_results(path, config)
    if data is None or LAYOUT_ENTRY not in data:
        return data
    try:
        layout = json.loads(str(data.pop(LAYOUT_ENTRY)))
        return unflatten(data, layout)
    except (ValueError, TypeError, KeyError, ImportError, AttributeError):
        return None
