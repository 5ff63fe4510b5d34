"""The recorded parameters of a sweep: encoded for its store, compared exactly on resume.

A sweep records every parameter its tasks depend on (the model, the run, the seed scheme, the
tolerance, the code version, the device kind). A resume states the same parameters again;
:func:`check_resume` refuses it, naming the first key that differs, when any value differs, or when a
key is recorded and not requested or requested and not recorded. Nothing is filled from defaults.
Numbers are compared exactly (a float survives the store's JSON unchanged), arrays by shape and
value (NaN equals NaN).
"""
from __future__ import annotations

import math
from typing import Any, Mapping

import numpy as np

_ARRAY = "__ndarray__"


class ParameterMismatch(ValueError):
    """A resume refused because a recorded parameter differs from the request.

    Parameters
    ----------
    key : str
        The first parameter that differs.
    message : str
        The full message (it names ``key``, the recorded and the requested value).
    """

    def __init__(self, key: str, message: str) -> None:
        super().__init__(message)
        self.key = key


def encode(value: Any, name: str = "value") -> Any:
    """A JSON-ready copy of ``value`` (numpy arrays and scalars, tuples, nested mappings).

    Parameters
    ----------
    value : Any
        ``None``, ``bool``, ``int``, ``float``, ``str``, numpy scalars and arrays (numeric, boolean
        or text), and lists, tuples and ``str``-keyed mappings of these.
    name : str, optional
        The parameter's name, for the error message.

    Returns
    -------
    Any
        The same value made of JSON types; an array becomes ``{"__ndarray__": nested list,
        "shape": [...]}`` (:func:`decode` turns it back).

    Raises
    ------
    TypeError
        A value of another type (the message names ``name``).
    """
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, np.ndarray):
        if value.dtype.kind not in "biufU":
            raise TypeError(f"{name}: arrays of dtype {value.dtype} cannot be recorded")
        return {_ARRAY: value.tolist(), "shape": list(value.shape)}
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, (int, float)):
        return value
    if isinstance(value, (list, tuple)):
        return [encode(v, f"{name}[{i}]") for i, v in enumerate(value)]
    if isinstance(value, Mapping):
        bad = [k for k in value if not isinstance(k, str)]
        if bad:
            raise TypeError(f"{name}: mapping keys must be strings; got {bad[0]!r}")
        return {k: encode(v, f"{name}.{k}") for k, v in value.items()}
    raise TypeError(f"{name}: a {type(value).__name__} cannot be recorded (numbers, text, arrays, "
                    "lists and mappings can)")


def decode(value: Any) -> Any:
    """The inverse of :func:`encode`: arrays come back as numpy arrays.

    Parameters
    ----------
    value : Any
        A value :func:`encode` returned (possibly read back from JSON).

    Returns
    -------
    Any
        ``value`` with every encoded array turned back into a :class:`numpy.ndarray`.
    """
    if isinstance(value, dict):
        if _ARRAY in value:
            return np.asarray(value[_ARRAY]).reshape(value["shape"])
        return {k: decode(v) for k, v in value.items()}
    if isinstance(value, list):
        return [decode(v) for v in value]
    return value


def same(a: Any, b: Any) -> bool:
    """Whether two parameter values are exactly the same (after :func:`encode`).

    Parameters
    ----------
    a, b : Any
        Parameter values (encoded or not).

    Returns
    -------
    bool
        Equal types of value (a boolean never equals a number, text never a number), equal numbers
        (NaN equals NaN), equal texts, mappings with the same keys, and arrays and lists of the
        same shape and values (an array equals the nested list of its values).
    """
    a, b = _canon(encode(a)), _canon(encode(b))
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b or (math.isnan(a) and math.isnan(b))
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


def _canon(v: Any) -> Any:
    if isinstance(v, dict):
        return _canon(v[_ARRAY]) if _ARRAY in v else {k: _canon(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_canon(x) for x in v]
    return v


def first_difference(recorded: Mapping[str, Any], requested: Mapping[str, Any]) -> str | None:
    """The first key on which a request differs from the record.

    Parameters
    ----------
    recorded : Mapping[str, Any]
        The parameters a store recorded.
    requested : Mapping[str, Any]
        The parameters of the request.

    Returns
    -------
    str or None
        The first differing key in the request's order (then the record's keys it lacks): a value
        that differs (:func:`same`), or a key present on one side only; ``None`` when all agree.
    """
    for k in list(requested) + [k for k in recorded if k not in requested]:
        if k not in recorded or k not in requested or not same(recorded[k], requested[k]):
            return k
    return None


def _show(v: Any) -> str:
    text = repr(_canon(encode(v)))  # arrays as nested lists, on one line
    return text if len(text) <= 120 else text[:117] + "..."


def check_resume(recorded: Mapping[str, Any], requested: Mapping[str, Any], *, where: str) -> None:
    """Refuse a resume whose parameters differ from the recorded ones.

    Parameters
    ----------
    recorded : Mapping[str, Any]
        The parameters the store recorded.
    requested : Mapping[str, Any]
        The parameters of this run.
    where : str
        The store, for the message.

    Raises
    ------
    ParameterMismatch
        Naming the first differing key (:func:`first_difference`) with both values.
    """
    key = first_difference(recorded, requested)
    if key is None:
        return
    if key not in recorded:
        what = f"is requested ({_show(requested[key])}) but {where} does not record it"
    elif key not in requested:
        what = f"is recorded in {where} ({_show(recorded[key])}) but not requested"
    else:
        what = f"differs: {where} records {_show(recorded[key])}, this run asks {_show(requested[key])}"
    raise ParameterMismatch(key, f"resume refused: parameter '{key}' {what}. Use the recorded value "
                                 "or another output file.")
