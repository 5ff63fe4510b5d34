"""Results files (``stumplib.core.results_io``): written atomically, reloaded only when their
configuration matches; structured results flattened and rebuilt exactly."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest
import torch

from stumplib.core import results_io


CONFIG = {"m": 64, "n": 32, "lr": 1e3, "seeds": [0, 1, 2], "prior": (0.2, 0.8)}


def test_save_then_load_roundtrip(tmp_path: Path):
    path = tmp_path / "run.npz"
    arrays = {"beta": np.linspace(1, 2, 5), "loss": np.arange(6.0).reshape(2, 3)}
    results_io.save_results(path, arrays, CONFIG)
    back = results_io.load_results(path, dict(CONFIG))
    assert back is not None and set(back) == set(arrays)
    for k in arrays:
        np.testing.assert_array_equal(back[k], arrays[k])


@pytest.mark.parametrize("change", [{"m": 65}, {"lr": 1e4}, {"seeds": [0, 1]}, {"prior": (0.0, 1.0)},
                                    {"extra": 1}], ids=["m", "lr", "seeds", "prior", "extra-key"])
def test_reload_with_other_configuration_returns_none(tmp_path: Path, change):
    path = tmp_path / "run.npz"
    results_io.save_results(path, {"beta": np.ones(3)}, CONFIG)
    assert results_io.load_results(path, {**CONFIG, **change}) is None
    assert results_io.load_results(path, CONFIG) is not None  # the file itself is still good


def test_absent_or_corrupt_file_returns_none(tmp_path: Path):
    assert results_io.load_results(tmp_path / "missing.npz", CONFIG) is None
    bad = tmp_path / "corrupt.npz"
    bad.write_bytes(b"PK\x03\x04 this is not a zip archive")
    assert results_io.load_results(bad, CONFIG) is None


class _Boom(Exception):
    pass


@pytest.mark.parametrize("when", ["during np.savez", "during fsync", "KeyboardInterrupt"])
def test_interrupted_write_leaves_old_file_intact(tmp_path: Path, monkeypatch, when):
    path = tmp_path / "run.npz"
    old = {"beta": np.arange(4.0)}
    results_io.save_results(path, old, CONFIG)
    before = path.read_bytes()

    if when == "during np.savez":
        real = np.savez

        def savez_then_fail(fh, **kw):
            real(fh, **kw)  # the temporary file holds (some of) the new data ...
            fh.flush()
            raise _Boom("simulated interrupt mid-write")  # ... and the write is cut short
        monkeypatch.setattr(results_io.np, "savez", savez_then_fail)
        exc = _Boom
    elif when == "during fsync":
        def fsync_fail(fd):
            raise _Boom("simulated power cut before the data reached the disk")
        monkeypatch.setattr(results_io.os, "fsync", fsync_fail)
        exc = _Boom
    else:
        def savez_interrupt(fh, **kw):
            fh.write(b"PK\x03\x04half")
            raise KeyboardInterrupt
        monkeypatch.setattr(results_io.np, "savez", savez_interrupt)
        exc = KeyboardInterrupt

    with pytest.raises(exc):
        results_io.save_results(path, {"beta": np.arange(1000.0), "new": np.ones(3)}, {**CONFIG, "m": 1})
    assert path.read_bytes() == before, "the previous results file was modified by a failed write"
    back = results_io.load_results(path, CONFIG)
    assert back is not None and set(back) == {"beta"}
    np.testing.assert_array_equal(back["beta"], old["beta"])
    leftovers = [p.name for p in tmp_path.iterdir() if p.name != "run.npz"]
    assert not leftovers, f"temporary files left behind: {leftovers}"


def test_interrupted_first_write_leaves_no_file(tmp_path: Path, monkeypatch):
    path = tmp_path / "sub" / "run.npz"

    def fail(fh, **kw):
        fh.write(b"partial")
        raise _Boom("interrupt")
    monkeypatch.setattr(results_io.np, "savez", fail)
    with pytest.raises(_Boom):
        results_io.save_results(path, {"a": np.ones(2)}, CONFIG)
    assert not path.exists()
    assert results_io.load_results(path, CONFIG) is None
    assert list(path.parent.iterdir()) == []


# --------------------------------------------------------------------------------------------
# structured results
# --------------------------------------------------------------------------------------------
@dataclass
class _Inner:
    values: np.ndarray
    label: str
    weight: float | None = None


@dataclass
class _Outer:
    runs: list
    table: dict
    pair: tuple
    count: int = 0
    extra: dict = field(default_factory=dict)


def _example() -> _Outer:
    rng = np.random.default_rng(0)
    return _Outer(runs=[_Inner(rng.normal(size=(3, 4)), "a", 0.5), _Inner(np.arange(5), "b")],
                  table={"beta": rng.normal(size=7), "nested": {"k": np.float64(2.5), "none": None},
                         "odd.key": np.ones(2)},
                  pair=(np.int64(3), [1.0, float("nan")]), count=4,
                  extra={"tensor": torch.linspace(0, 1, 6, dtype=torch.float64)})


def _assert_same(a, b):
    assert type(a) is type(b), (type(a), type(b))
    if isinstance(a, np.ndarray):
        assert a.dtype == b.dtype and a.shape == b.shape
        np.testing.assert_array_equal(a, b)
    elif isinstance(a, dict):
        assert list(a) == list(b)
        for k in a:
            _assert_same(a[k], b[k])
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b)
        for u, v in zip(a, b):
            _assert_same(u, v)
    elif hasattr(a, "__dataclass_fields__"):
        for k in a.__dataclass_fields__:
            _assert_same(getattr(a, k), getattr(b, k))
    elif isinstance(a, float) and np.isnan(a):
        assert np.isnan(b)
    else:
        assert a == b


def test_flatten_then_unflatten_rebuilds_every_type():
    obj = _example()
    arrays, layout = results_io.flatten(obj)
    assert all(isinstance(v, np.ndarray) for v in arrays.values())
    assert "runs.0.values" in arrays and "table.odd.key" in arrays
    back = results_io.unflatten(arrays, layout)
    obj.extra["tensor"] = obj.extra["tensor"].numpy()  # tensors come back as numpy arrays
    _assert_same(obj, back)


def test_structured_result_round_trips_through_a_file(tmp_path: Path):
    path = tmp_path / "s.npz"
    results_io.save_structured(path, _example(), CONFIG)
    back = results_io.load_structured(path, CONFIG)
    ref = _example()
    ref.extra["tensor"] = ref.extra["tensor"].numpy()
    _assert_same(ref, back)
    assert results_io.load_structured(path, {**CONFIG, "m": 1}) is None


def test_flat_dicts_are_stored_as_before(tmp_path: Path):
    """A flat dict is written entry by entry (the files of :func:`save_results`), so results and
    callers from before structured storage keep working; both readers read both."""
    flat = {"beta": np.linspace(0, 1, 4), "n": 3, "grid": [1, 2, 3]}
    assert results_io.is_flat(flat)
    results_io.save_structured(tmp_path / "f.npz", flat, CONFIG)
    got = results_io.load_results(tmp_path / "f.npz", CONFIG)
    assert set(got) == {"beta", "n", "grid"} and got["n"].shape == () and got["grid"].tolist() == [1, 2, 3]
    results_io.save_results(tmp_path / "old.npz", {"beta": np.ones(2)}, CONFIG)
    np.testing.assert_array_equal(results_io.load_structured(tmp_path / "old.npz", CONFIG)["beta"], np.ones(2))


@pytest.mark.parametrize("obj", [{"a": {"b": np.ones(2)}}, {"a": None}, {"a": [np.ones(2), np.ones(3)]},
                                 [np.ones(2)], _Inner(np.ones(2), "x")],
                         ids=["nested", "none", "ragged", "list", "dataclass"])
def test_structured_results_are_not_flat(obj):
    assert not results_io.is_flat(obj)


@pytest.mark.parametrize("obj, word", [({"f": lambda: 1}, "type function"), ({"s": {1, 2}}, "type set"),
                                       ({1: np.ones(2)}, "dict keys"),
                                       ({"a": np.array([object()])}, "object array")],
                         ids=["function", "set", "int-key", "object-array"])
def test_unstorable_results_are_named(tmp_path: Path, obj, word):
    with pytest.raises(ValueError, match=word):
        results_io.save_structured(tmp_path / "x.npz", obj, CONFIG)


def test_read_config_gives_the_stored_configuration(tmp_path: Path):
    results_io.save_results(tmp_path / "r.npz", {"a": np.ones(1)}, {"m": 4, "grid": (1, 2)})
    assert results_io.read_config(tmp_path / "r.npz") == {"m": 4, "grid": [1, 2]}
    (tmp_path / "bad.npz").write_bytes(b"not a zip")
    assert results_io.read_config(tmp_path / "bad.npz") is None
