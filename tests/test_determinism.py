"""Same seed, same numbers; cached results are written atomically and reloaded only when they match.

- Every chapter executed twice at the ``smoke`` profile (papermill, fresh kernels, caching off so
  that both runs compute) glues identical values: numbers and strings equal exactly, figures equal
  as PNG bytes (``slow``). The first run is the session's shared one (``conftest.executed_chapter``).
- :func:`stumplib.results_io.save_results` interrupted mid-write leaves the previous file intact and
  no temporary file behind; a reload with a different configuration returns ``None`` (recompute).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from conftest import CHAPTERS, execute
from stumplib import results_io


# --------------------------------------------------------------------------------------------
# results files
# --------------------------------------------------------------------------------------------
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
# chapters: two executions, identical glue
# --------------------------------------------------------------------------------------------
def _glued(nb: dict) -> dict[str, object]:
    """name -> glued payload (text/plain for values, PNG/SVG data for figures) of an executed notebook."""
    out: dict[str, object] = {}
    for cell in nb["cells"]:
        for o in cell.get("outputs", []):
            key = o.get("metadata", {}).get("scrapbook", {}).get("name")
            if key is None or o.get("output_type") != "display_data":
                continue
            data = o.get("data", {})
            for mime in ("image/png", "image/svg+xml", "text/html", "text/plain"):
                got = [k for k in data if k.endswith(mime)]  # papermill records: application/papermill.record/<mime>
                if got:
                    v = data[got[0]]
                    out[key] = (mime, "".join(v) if isinstance(v, list) else v)
                    break
    return out


@pytest.mark.slow
@pytest.mark.parametrize("path", CHAPTERS, ids=[p.stem for p in CHAPTERS])
def test_two_smoke_executions_glue_identical_values(path: Path, tmp_path: Path, executed_chapter):
    """The shared smoke run and one more, both computing everything (``STUMPBOOK_CACHE=0``: the
    second run must not reload the first one's results), in fresh kernels."""
    first = _glued(executed_chapter(path))
    second = _glued(execute(path, tmp_path / path.name, {"profile": "smoke", "device": "cpu"},
                            tmp_path / "results"))
    assert first.keys() == second.keys(), f"glue keys differ: {sorted(set(first) ^ set(second))}"
    differ = sorted(k for k in first if first[k] != second[k])
    # ignore keys that measure wall-clock time: they are not results
    differ = [k for k in differ if not any(t in k for t in ("runtime", "seconds", "elapsed", "_time_s", "wall"))]
    assert not differ, f"{path.name}: glued values differ between two runs: " + "; ".join(
        f"{k}: {str(first[k][1])[:60]!r} vs {str(second[k][1])[:60]!r}" for k in differ[:8])
