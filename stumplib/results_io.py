"""Results files: written atomically, reloaded only when their configuration matches."""
from __future__ import annotations

import json
import os
import tempfile
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["save_results", "load_results", "config_key"]


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
    if "__config__" in arrays:
        raise ValueError("arrays must not use the reserved key '__config__'")
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            np.savez(fh, __config__=np.array(config_key(config)),
                     **{k: np.asarray(v) for k, v in arrays.items()})
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
            if str(data["__config__"]) != config_key(config):
                return None
            return {k: data[k] for k in data.files if k != "__config__"}
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile):
        return None
