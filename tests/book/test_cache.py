"""The results cache (``stumplib.book.cache``): flat and structured results, reuse, configuration
and code keys, ``STUMPBOOK_CACHE=0``, pruning and its command line. (The cache across a library
change and the book build: ``test_build_cache.py``.)"""
from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pytest

from stumplib.book import cache
from stumplib.book.__main__ import main as book_main
from stumplib.core.results_io import save_results
from stumplib.stump.trainer import RunConfig, TrainResult, train_gd


@pytest.fixture
def results(tmp_path, monkeypatch) -> Path:
    """An empty results folder for :func:`cache.cached`, reuse on."""
    monkeypatch.setenv(cache.RESULTS_ENV, str(tmp_path / "results"))
    monkeypatch.delenv(cache.CACHE_ENV, raising=False)
    return tmp_path / "results"


def _counting(value):
    calls = []

    def compute():
        calls.append(1)
        return value() if callable(value) else value
    return compute, calls


def test_cached_flat_dict_is_computed_once_and_reloaded(results):
    compute, calls = _counting({"x": np.arange(4.0), "n": 3})
    first = cache.cached("unit", {"a": 1}, compute, verbose=False)
    again = cache.cached("unit", {"a": 1}, compute, verbose=False)
    assert len(calls) == 1 and set(first) == set(again) == {"x", "n"}
    for k in first:
        assert isinstance(first[k], np.ndarray)
        np.testing.assert_array_equal(first[k], again[k])
    cache.cached("unit", {"a": 2}, compute, verbose=False)  # another configuration: computes
    assert len(calls) == 2 and len(list(results.glob("unit-*.npz"))) == 2


def test_cached_turned_off_recomputes(results, monkeypatch):
    compute, calls = _counting({"x": np.ones(2)})
    cache.cached("unit", {}, compute, verbose=False)
    monkeypatch.setenv(cache.CACHE_ENV, "0")
    cache.cached("unit", {}, compute, verbose=False)
    assert len(calls) == 2


def test_cached_key_follows_the_code_version(results, monkeypatch):
    compute, calls = _counting({"x": np.ones(2)})
    cache.cached("unit", {}, compute, verbose=False)
    monkeypatch.setattr(cache, "code_version", lambda: "0" * 16)
    cache.cached("unit", {}, compute, verbose=False)
    assert len(calls) == 2


def test_cached_structured_result_comes_back_as_computed(results):
    """A :class:`TrainResult` (a dataclass holding RunConfig dataclasses, arrays, ``None`` and an
    int) is stored without any ``arrays()`` pair and reloads equal, with its types."""
    cfgs = [RunConfig(6, 6, seed=0, lr=1e2, beta_stop=20.5, lr_marks=((20.2, 50.0),)),
            RunConfig(6, 6, seed=1, lr=1e2)]
    compute, calls = _counting(lambda: {"run": train_gd(cfgs, 40, device="cpu", progress=False),
                                        "note": "two runs", "extra": None})
    first = cache.cached("train", {"steps": 40}, compute, verbose=False)
    again = cache.cached("train", {"steps": 40}, compute, verbose=False)
    assert len(calls) == 1
    for got in (first, again):
        r = got["run"]
        assert isinstance(r, TrainResult) and r.configs == cfgs and r.last_step == 40
        assert got["note"] == "two runs" and got["extra"] is None and r.scale_step is None
    for name in ("steps", "beta", "b", "loss", "diverged_at", "stop_step", "mark_step", "mark_beta"):
        np.testing.assert_array_equal(getattr(first["run"], name), getattr(again["run"], name))


def test_cached_prints_only_when_verbose(results, capsys):
    def compute():
        return {"x": np.ones(1)}
    cache.cached("unit", {}, compute, verbose=False)
    assert capsys.readouterr().out == ""
    cache.cached("unit", {}, compute)
    assert "reloaded" in capsys.readouterr().out


# ------------------------------------------------------------------------------------ prune
def test_prune_deletes_only_what_cannot_be_reloaded(results):
    cache.cached("current", {}, lambda: {"x": np.ones(1)}, verbose=False)
    cache.cached("current_tree", {}, lambda: {"x": {"y": np.ones(1)}}, verbose=False)
    old = save_results(results / "old-0123456789abcdef.npz", {"x": np.ones(1)},
                       {"config": {}, "code": "0" * 16, "compute": ""})
    (results / "broken-0000000000000000.npz").write_bytes(b"not a zip")
    (results / "current-x.npz.123.tmp").write_bytes(b"half")
    listed = cache.prune_results(dry_run=True)
    assert {p.name for p in listed} == {old.name, "broken-0000000000000000.npz", "current-x.npz.123.tmp"}
    assert all(p.exists() for p in listed)
    assert cache.prune_results() == listed and not any(p.exists() for p in listed)
    assert sorted(p.name.split("-")[0] for p in results.iterdir()) == ["current", "current_tree"]
    assert cache.prune_results() == []


def test_prune_deletes_lock_files_no_process_holds(results):
    cache.cached("current", {}, lambda: {"x": np.ones(1)}, verbose=False)
    results.joinpath("left-0123456789abcdef.lock").write_text("")
    with cache.lock("busy-0123456789abcdef"):
        listed = cache.prune_results()
        assert [p.name for p in listed] == ["left-0123456789abcdef.lock"]
        assert results.joinpath("busy-0123456789abcdef.lock").exists()
    assert [p.name for p in cache.prune_results()] == ["busy-0123456789abcdef.lock"]


# ------------------------------------------------------------------ exclusive store (the lock)
def _blocking_compute(started: threading.Event, release: threading.Event, calls: list):
    """A computation that says it started, then waits (at most 20 s) to be released."""
    def compute():
        calls.append(1)
        started.set()
        release.wait(20)
        return {"x": np.full(2, float(len(calls)))}
    return compute


def _in_thread(fn):
    out: dict = {}
    t = threading.Thread(target=lambda: out.setdefault("value", fn()), daemon=True)
    t.start()
    return t, out


def test_exclusive_store_does_not_wait_for_another_configuration(results):
    """Two seeds' results under one name compute at the same time: the lock is the result's own
    (the first computation is still running when the second one finishes)."""
    started, release, calls = threading.Event(), threading.Event(), []
    first, _ = _in_thread(lambda: cache.store(
        "scales", {"seed": 0}, _blocking_compute(started, release, calls), exclusive=True))
    assert started.wait(10)
    other, got = _in_thread(lambda: cache.store(
        "scales", {"seed": 1}, lambda: {"x": np.zeros(2)}, exclusive=True))
    other.join(10)
    finished_meanwhile = not other.is_alive()
    release.set()
    first.join(20)
    assert finished_meanwhile, "a result of another configuration waited for the lock"
    assert np.array_equal(got["value"]["x"], np.zeros(2)) and len(calls) == 1


def test_exclusive_store_of_the_same_result_waits_then_reloads(results):
    """The second process asking for the same result waits for the first and reloads its result
    instead of computing it again."""
    started, release, calls = threading.Event(), threading.Event(), []
    compute = _blocking_compute(started, release, calls)
    first, a = _in_thread(lambda: cache.store("scales", {"seed": 0}, compute, exclusive=True))
    assert started.wait(10)
    second, b = _in_thread(lambda: cache.store("scales", {"seed": 0}, compute, exclusive=True))
    second.join(1.0)
    waited = second.is_alive()
    release.set()
    first.join(20)
    second.join(20)
    assert waited, "the second request did not wait for the result being computed"
    assert len(calls) == 1
    assert np.array_equal(a["value"]["x"], b["value"]["x"])


def test_prune_command_line(results, capsys):
    save_results(results / "old-0123456789abcdef.npz", {"x": np.ones(1)}, {"code": "0"})
    assert book_main(["prune", "--dry-run"]) == 0
    assert "would delete 1 files" in capsys.readouterr().out
    assert book_main(["prune"]) == 0 and not list(results.iterdir())


def test_an_unreadable_stored_result_is_recomputed_with_a_warning_and_logged(results):
    """A truncated file where the result belongs: a :class:`cache.CacheWarning`, one line in the
    log the build record reads, the result recomputed and stored; the next call reloads silently."""
    calls = []

    def compute():
        calls.append(1)
        return {"x": np.arange(3.0)}

    cache.cached("broken", {"a": 1}, compute, verbose=False)
    (path,) = results.glob("broken-*.npz")
    path.write_bytes(path.read_bytes()[:40])  # truncated
    with pytest.warns(cache.CacheWarning, match="not reloaded: unreadable"):
        got = cache.cached("broken", {"a": 1}, compute, verbose=False)
    np.testing.assert_array_equal(got["x"], np.arange(3.0))
    assert len(calls) == 2
    (row,) = cache.cache_warnings()
    assert row["file"] == path.name and row["code"] == cache.code_version()
    assert row["why"].startswith("unreadable")
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        cache.cached("broken", {"a": 1}, compute, verbose=False)  # rewritten: reloads, no warning
    assert len(calls) == 2 and len(cache.cache_warnings()) == 1
    assert cache.cache_warnings() == [row]
