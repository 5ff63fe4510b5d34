"""Tests of stumplib.sweep.readers: stores read back into the layouts chapter 6 uses; the committed
deciding run, converted, reads back exactly as the old reader reads the original."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

from stumplib.sweep.readers import (landscape_from_store, merge_diagrams, minimiser_runs_from_store,
                                    omega_task, parse_seed_task, seed_task, stack_seeds)
from stumplib.sweep.store import Store, StoreError

ROOT = Path(__file__).resolve().parents[2]


def test_task_ids_round_trip():
    assert seed_task(250, 3) == "d250_seed3" and parse_seed_task("d250_seed3") == (250, 3)
    assert seed_task("control", 2) == "control_seed2"
    assert parse_seed_task("control_seed2") == ("control", 2)
    assert parse_seed_task("theory") is None and omega_task(0.35) == "omega0.35"


def test_stack_seeds_joins_fills_and_refuses_a_missing_seed_axis():
    a = {"x": np.array([[1.0, 2.0]]), "ok": np.array([True]), "th": np.array([0.1, 0.2])}
    b = {"x": np.array([[3.0, 4.0]]), "th": np.array([0.1, 0.2]), "g": np.array([[5.0, 6.0]])}
    out = stack_seeds([a, b], shared=("th",))
    assert out["x"].shape == (2, 2) and np.array_equal(out["th"], [0.1, 0.2])
    assert out["ok"].tolist() == [True, False]
    assert np.isnan(out["g"][0]).all() and out["g"][1].tolist() == [5.0, 6.0]
    with pytest.raises(ValueError, match="'x' has no leading seed axis"):
        stack_seeds([{"x": np.array([1.0, 2.0])}])


def test_merge_diagrams_renumbers_the_points():
    one = {"omega": np.array([0.2]), "pt_w": np.array([0, 0]), "pt_alpha": np.array([1.5, 1.2])}
    two = {"omega": np.array([0.3]), "pt_w": np.array([0, 0, 0]), "pt_alpha": np.array([1.5, 1.2, 1.1])}
    out = merge_diagrams([one, two])
    assert out["omega"].tolist() == [0.2, 0.3] and out["pt_w"].tolist() == [0, 0, 1, 1, 1]


def test_landscape_store_reads_in_the_flat_window_layout(tmp_path):
    th = np.array([0.09, 0.1, 0.11])

    def one(seed):
        return {"thetas": th, "d": np.array(40), "alpha": np.array(1.0164), "seeds": np.array([seed]),
                "train_loss": np.full((1, 3), seed + 0.5), "free_theta": np.array([0.1 + seed])}
    with Store(tmp_path / "f.npz", kind="phase_flat_window", params={"alpha": 1.0164, "thetas": th,
                                                                     "A": np.eye(2)}) as s:
        for seed in (1, 0):
            s.put(seed_task(40, seed), one(seed), {"seconds": 2.0})
        s.put("theory", {"thetas": th, "train_loss": np.ones((2, 3)), "n_iter": np.array(5)}, {})
    got = landscape_from_store(tmp_path / "f.npz")
    land = got["landscape"][40]
    assert land["seeds"].tolist() == [0, 1] and land["train_loss"][:, 0].tolist() == [0.5, 1.5]
    assert land["free_theta"].tolist() == [0.1, 1.1] and float(land["seconds"]) == 4.0
    assert got["theory"]["n_iter"] == 5 and got["root"] is None and got["control"] is None
    assert np.array_equal(got["meta"]["thetas"], th) and got["meta"]["A"].shape == (2, 2)
    with pytest.raises(StoreError, match="not 'phase_minimisers'"):
        minimiser_runs_from_store(tmp_path / "f.npz")


def test_the_converted_deciding_run_reads_back_as_the_original(tmp_path):
    from stumplib.book.runs import read_runs

    spec = importlib.util.spec_from_file_location("import_legacy_run",
                                                  ROOT / "scripts" / "import_legacy_run.py")
    conv = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(conv)
    src = ROOT / "scripts" / "PHASE_MINIMISERS_4000.npz"
    supplied = dict(gd_seeds=8, gd_max_d=1000, max_iter=20000, n_nodes=16, device_kind="cpu",
                    seed_scheme="cpu generator seed * 1000 + s")
    with pytest.raises(SystemExit, match="does not record gd_seeds, gd_max_d, max_iter, n_nodes, "
                                         "seed_scheme, device_kind"):
        conv.convert(src, tmp_path / "a.npz", {})
    with pytest.raises(SystemExit, match="records gtol = 1e-08; a recorded parameter cannot"):
        conv.convert(src, tmp_path / "a.npz", dict(supplied, gtol=1e-6))
    prov = conv.convert(src, tmp_path / "c.npz", supplied, ["x"])
    assert prov["supplied_at_conversion"] == supplied
    assert "PHASE_MINIMISERS_4000.npz" in prov["imported_from"]
    with np.load(src) as f:
        old = read_runs({k: f[k] for k in f.files})
    new, meta = minimiser_runs_from_store(tmp_path / "c.npz")
    assert sorted(new) == sorted(old) == [250, 500, 1000, 2000, 4000]
    for d in old:
        keep = old[d]["ran"].any(1)
        for k, v in old[d].items():
            if k in ("d", "seconds"):
                continue
            want = v if k == "alphas" else v[keep]
            if k == "source":
                want = np.where(old[d]["ran"][keep], want, -1)
            assert new[d][k].shape == want.shape, (d, k)
            assert np.array_equal(new[d][k], want, equal_nan=True), (d, k)
    assert meta["params"]["gtol"] == 1e-8 and meta["params"]["code_version"] == "c7ba22ef11d74c45"
    commits = [r.get("commit", "")[:7] for r in meta["runs"][:4]]
    assert commits == ["a91892d", "8bc1286", "c52691c", "c262fb1"]
    assert meta["done"] == sum(int(old[d]["ran"].any(1).sum()) for d in old)
