"""Tests of stumplib.sweep.params: exact comparison of recorded parameters, refusal naming the key."""
from __future__ import annotations

import json

import numpy as np
import pytest

from stumplib.sweep.params import (ParameterMismatch, check_resume, decode, encode, first_difference,
                                   same)

A = np.array([[0.6, 0.4], [0.4, 0.6]])


def test_encode_survives_json_exactly():
    p = {"A": A, "gtol": 1e-8, "alphas": [1.0164, 1.25], "seed": np.int64(3), "init": "semantic",
         "flag": True, "map": {"0.3": 1e-3}, "none": None}
    back = decode(json.loads(json.dumps(encode(p))))
    assert isinstance(back["A"], np.ndarray) and np.array_equal(back["A"], A)
    assert back["gtol"] == 1e-8 and back["seed"] == 3 and type(back["seed"]) is int
    assert same(p, back)
    with pytest.raises(TypeError, match="when"):
        encode({"when": object()})


@pytest.mark.parametrize("a, b, equal", [
    (1e-8, 1e-8, True), (1e-8, 1.0000000000000002e-8, False),  # exact, no tolerance
    (float("nan"), float("nan"), True), (True, 1, False), ("1", 1, False),
    (A, A.tolist(), True), (A, A.T.copy().reshape(4), False), (A, A + 1e-15, False),
    ({"x": 1}, {"x": 1, "y": 2}, False), ([1, 2], [1, 2, 3], False)])
def test_same_is_exact(a, b, equal):
    assert same(a, b) is equal


def test_first_difference_names_the_first_key_either_side():
    rec = {"omega": 0.3, "gtol": 1e-8, "code_version": "abc", "device_kind": "cpu"}
    assert first_difference(rec, dict(rec)) is None
    assert first_difference(rec, dict(rec, gtol=1e-7, device_kind="cuda")) == "gtol"
    less = {k: v for k, v in rec.items() if k != "code_version"}
    assert first_difference(rec, less) == "code_version"
    assert first_difference(rec, dict(rec, n_alpha=1.25)) == "n_alpha"


def test_check_resume_refuses_naming_the_key_and_both_values():
    rec = {"omega": 0.3, "A": A, "device_kind": "cpu"}
    check_resume(rec, {"omega": 0.3, "A": A.copy(), "device_kind": "cpu"}, where="x.npz")
    with pytest.raises(ParameterMismatch, match=r"'device_kind' differs: x.npz records 'cpu', this run "
                                                r"asks 'cuda'") as e:
        check_resume(rec, dict(rec, device_kind="cuda"), where="x.npz")
    assert e.value.key == "device_kind" and isinstance(e.value, ValueError)
    with pytest.raises(ParameterMismatch, match="'seed' is requested .* does not record it"):
        check_resume(rec, dict(rec, seed=0), where="x.npz")
    with pytest.raises(ParameterMismatch, match="'A' is recorded .* but not requested"):
        check_resume(rec, {"omega": 0.3, "device_kind": "cpu"}, where="x.npz")
