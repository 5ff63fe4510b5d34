"""Tests of stumplib.phase.minimise: converged minimisers and the exact test error."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from stumplib.core.device import make_generator
from stumplib.phase.minimise import (exact_test_error, gradient_descent, initial_points, make_problem,
                                     minimise, minimiser_runs)

A = ((0.6, 0.4), (0.4, 0.6))


def _brute_force_test_error(Q, q_star, omega, sigma, n, seed):
    """Fresh tokens in all d dimensions, no reduction: the definition itself."""
    from stumplib.phase.data import positional_encodings, softmax_rows, teacher_matrix

    d = Q.shape[0]
    g = torch.Generator().manual_seed(seed)
    z = sigma * torch.randn(n, 2, d, generator=g, dtype=torch.float64)
    x = z + positional_encodings(d)
    S = softmax_rows(x @ Q / d ** 0.5)
    T = teacher_matrix(z, q_star, omega=omega, A=A)
    err = ((S @ x - T @ z) ** 2).sum((-1, -2)) / (2 * d)
    return float(err.mean()), float(err.std() / n ** 0.5)


@pytest.mark.parametrize("omega", [0.0, 0.3, 0.8])
def test_exact_test_error_matches_monte_carlo(omega):
    pb = make_problem(60, [0], 10, omega=omega)
    g = torch.Generator().manual_seed(3)
    Q = 0.8 * pb.q_star[0] + 0.5 * torch.randn(60, generator=g, dtype=torch.float64) + 0.7
    exact = exact_test_error(Q, pb.q_star[0], omega=omega, A=A)
    mc, se = _brute_force_test_error(Q, pb.q_star[0], omega, 0.5, 100_000, 1)
    assert abs(exact - mc) < 4 * se, (exact, mc, se)


def test_exact_test_error_converges_in_the_rule_and_batches():
    pb = make_problem(50, [0, 1, 2], 10)
    Q = 0.9 * pb.q_star + 0.2
    a = exact_test_error(Q, pb.q_star, omega=0.3, n_nodes=16)  # the default rule
    b = exact_test_error(Q, pb.q_star, omega=0.3, n_nodes=24)
    np.testing.assert_allclose(a, b, rtol=1e-6)  # far below any seed-to-seed spread
    one = [exact_test_error(Q[i], pb.q_star[i], omega=0.3, n_nodes=12) for i in range(3)]
    a = exact_test_error(Q, pb.q_star, omega=0.3, n_nodes=12)
    np.testing.assert_allclose(a, one, rtol=1e-12)


def test_minimiser_meets_the_relative_gradient_tolerance_and_is_a_minimum():
    pb = make_problem(80, [0], 100)
    r = minimise(pb, 0, 100, pb.q_star[0], gtol=1e-8)
    assert r["converged"] and r["rel_grad"] <= 1e-8
    mask = (torch.arange(100) < 100).to(torch.float64)[None, :, None]
    L0, _ = pb.objective(r["Q"][None, :, None], mask, slice(0, 1))
    g = torch.Generator().manual_seed(0)
    for _ in range(5):  # no nearby point is lower: a minimum, not a saddle
        dQ = 1e-3 * torch.randn(80, generator=g, dtype=torch.float64)
        L1, _ = pb.objective((r["Q"] + dQ)[None, :, None], mask, slice(0, 1))
        assert float(L1) > float(L0)


def test_long_gradient_descent_approaches_the_minimiser():
    pb = make_problem(40, [0], 60)
    mask = torch.ones(1, 60, 1, dtype=torch.float64)
    r = minimise(pb, 0, 60, pb.q_star[0])
    Q_gd = gradient_descent(pb, pb.q_star[:, :, None].clone(), mask, lr=0.5, steps=20000)[0, :, 0]
    assert torch.linalg.norm(Q_gd - r["Q"]) < 1e-4 * torch.linalg.norm(r["Q"])


def test_minimiser_runs_same_seed_same_numbers_and_stay_semantic():
    a = minimiser_runs([1.25], 60, 2, gd_steps=20, gd_seeds=1)
    b = minimiser_runs([1.25], 60, 2, gd_steps=20, gd_seeds=1)
    np.testing.assert_array_equal(a["test_error"], b["test_error"])
    assert a["converged"].all() and np.all(a["theta_emp"] > 0.3)
    assert np.isfinite(a["gd_test_error"][0]).all() and np.isnan(a["gd_test_error"][1]).all()


def test_initial_points():
    pb = make_problem(20, [0, 1], 5)
    assert torch.equal(initial_points(pb, "semantic"), pb.q_star)
    assert torch.allclose(initial_points(pb, "positional").norm(dim=1), torch.ones(2, dtype=torch.float64))



def test_random_start_is_standard_normal_over_d_and_seeded():
    """``"random"``: ``Q ~ N(0, I_d / d)`` per seed. The 2 x 400 entries of ``sqrt(d) Q`` have
    mean 0 and variance 1 within five standard errors (``5 / sqrt(800) = 0.18`` for the mean,
    ``5 sqrt(2 / 800) = 0.25`` for the variance); the same generator seed gives the same start."""
    pb = make_problem(400, [0, 1], 5)
    gen = lambda k: make_generator(k, torch.device("cpu"))  # noqa: E731
    Q = initial_points(pb, "random", generator=gen(0))
    z = (Q * 20.0).ravel()
    assert Q.shape == (2, 400) and Q.dtype == torch.float64
    assert abs(float(z.mean())) < 0.18 and abs(float(z.var()) - 1) < 0.25
    assert torch.equal(Q, initial_points(pb, "random", generator=gen(0)))
    assert not torch.equal(Q, initial_points(pb, "random", generator=gen(1)))
    with pytest.raises(ValueError, match="generator"):
        initial_points(pb, "random")


def _synthetic_runs(limit, slope, spread, seeds=400, ds=(100, 200, 400), seed=0):
    """Seed-by-seed test errors limit + slope / d + spread sqrt(100 / d) * N(0, 1), all converged."""
    rng = np.random.default_rng(seed)
    runs = {}
    for d in ds:
        e = rng.standard_normal((seeds, len(limit)))
        te = np.asarray(limit) + np.asarray(slope) / d + np.asarray(spread) * np.sqrt(100 / d) * e
        runs[d] = dict(test_error=te, converged=np.ones_like(te, dtype=bool))
    return runs


def test_decide_recovers_the_limit_and_sizes_the_seeds():
    from stumplib.phase.minimise import decide
    runs = _synthetic_runs([0.0028, 0.0023], [0.01, 0.02], [2e-4, 2e-4])
    dec = decide(runs, [0.0028, 0.0023], [1e-6, 1e-6], [0.00268, 0.00227])
    for j, lim in enumerate([0.0028, 0.0023]):
        assert abs(dec["limit"][j].value - lim) < 4 * dec["limit_se"][j]
    assert np.all(np.abs(dec["z_accurate"]) < 4) and np.max(np.abs(dec["z_published"])) > 4
    assert dec["spread_slope"] == pytest.approx(-0.5, abs=0.1) and dec["converged_fraction"] == 1.0
    assert dec["seeds_to_decide"] < 400  # already decided with 400 seeds
    runs[400]["converged"][0, 0] = False  # a run that did not converge is left out and counted
    dec2 = decide(runs, [0.0028, 0.0023], [1e-6, 1e-6], [0.00268, 0.00227])
    assert dec2["n"][-1, 0] == 399 and dec2["converged_fraction"] < 1


def test_dynamics_classification_on_a_constructed_map():
    """A linear map with a known unstable direction (m multiplied by 1.5 a step) and a stable one
    (0.5): iterated from m0, the classification finds growth and decay, and the table's agreement
    with a solver flag follows."""
    from stumplib.phase.minimise import classify_dynamics
    rng = np.random.default_rng(0)
    m0 = 3.0
    for factor, expected in ((1.5, "grows"), (0.5, "decays")):
        finals = {d: m0 * factor ** 8 * (1 + 0.1 * rng.standard_normal(4)) for d in (100, 400)}
        assert classify_dynamics(m0, finals) == expected
    assert classify_dynamics(m0, {100: np.full(4, 4.0), 400: np.full(4, 3.5)}) == "unclear"


def test_stability_by_dynamics_at_a_stable_semantic_point():
    from stumplib.phase.minimise import stability_by_dynamics
    from stumplib.phase.replica import solve_fixed_rule
    fp = solve_fixed_rule(1.5, omega=0.3, branch="semantic", n_nodes=6)
    pt = dict(omega=0.3, alpha=1.5, theta=float(fp["theta"]), q=float(fp["q"]), derivative=-1.6)
    rows = stability_by_dynamics([pt], [40, 160], 3, cache=False)
    assert rows[0]["solver"] == "stable" and rows[0]["dynamics"] == "decays" and rows[0]["agree"] is True
    unstable = dict(pt, derivative=1.4)  # the same point with a flag saying otherwise: a disagreement
    assert stability_by_dynamics([unstable], [40, 160], 3, cache=False)[0]["agree"] is False


def test_semantic_start_has_the_requested_overlaps():
    from stumplib.phase.minimise import semantic_start, summaries
    pb = make_problem(200, [0, 1], 10)
    s = summaries(semantic_start(pb, 0.1, 0.08, 0.05), pb.q_star, 0.5)
    np.testing.assert_allclose(s["m"], 0.05, rtol=1e-10)
    np.testing.assert_allclose(s["theta_emp"], 0.4, rtol=1e-10)
    np.testing.assert_allclose(s["q_emp"], 0.08, rtol=1e-10)


def _stored_names(results):
    """The array names of every results file under ``results`` (the keys the cache writes)."""
    names = []
    for p in results.glob("*.npz"):
        with np.load(p) as f:
            names += list(f.files)
    return names


def test_study_cache_is_structured_and_reloads_what_it_computed(tmp_path, monkeypatch):
    from stumplib.core import book
    from stumplib.phase.minimise import study

    monkeypatch.setenv(book.RESULTS_ENV, str(tmp_path))
    monkeypatch.delenv(book.CACHE_ENV, raising=False)
    kw = dict(gd_steps=20, gd_seeds=1, gd_max_d=10, max_iter=200)
    direct = study([1.0, 1.5], [8, 12], 2, cache=False, **kw)
    first, again = study([1.0, 1.5], [8, 12], 2, **kw), study([1.0, 1.5], [8, 12], 2, **kw)
    assert len(list(tmp_path.glob("ch6_minimisers-*.npz"))) == 1  # the second call reloaded
    for got in (first, again):
        assert sorted(got) == [8, 12]
        for d in (8, 12):
            assert sorted(got[d]) == sorted(direct[d])
            for k, v in direct[d].items():
                np.testing.assert_array_equal(got[d][k], v)
    assert int(first[12]["d"]) == 12 and "gd_test_error" in first[8] and "gd_test_error" not in first[12]
    assert not [n for n in _stored_names(tmp_path) if n.startswith(("d8_", "d12_"))]


def test_stability_by_dynamics_cache_is_structured_and_reloads_the_same_rows(tmp_path, monkeypatch):
    from stumplib.core import book
    from stumplib.phase.minimise import stability_by_dynamics
    from stumplib.phase.replica import solve_fixed_rule

    monkeypatch.setenv(book.RESULTS_ENV, str(tmp_path))
    monkeypatch.delenv(book.CACHE_ENV, raising=False)
    fp = solve_fixed_rule(1.5, omega=0.3, branch="semantic", n_nodes=6)
    pts = [dict(omega=0.3, alpha=a, theta=float(fp["theta"]), q=float(fp["q"]), derivative=-1.6)
           for a in (1.5, 2.0)]
    direct = stability_by_dynamics(pts, [20, 30], 2, cache=False)
    assert direct[0] != direct[1]  # two points, two different rows: the index is not lost
    assert stability_by_dynamics(pts, [20, 30], 2) == direct
    assert stability_by_dynamics(pts, [20, 30], 2) == direct  # reloaded
    assert len(list(tmp_path.glob("ch6_stability-*.npz"))) == 1
    assert not [n for n in _stored_names(tmp_path) if n.startswith("p0_") or n.startswith("p1_")]


def test_deciding_run_reads_the_values_written_into_a_file(tmp_path):
    """A synthetic file in ``scripts/phase_minimisers.py``'s layout reads back as the arrays and
    provenance written into it; a missing file gives ``None``."""
    from stumplib.phase.minimise import deciding_run

    assert deciding_run(tmp_path / "none.npz") is None
    te = {8: np.array([[0.1, 0.2], [0.3, np.nan]]), 16: np.array([[0.5, 0.6]])}
    np.savez(tmp_path / "run.npz", ds=np.array([8, 16]), command="python x.py --d 8 16",
             commit="a" * 40, machine="test box", seconds=12.5,
             d8_test_error=te[8], d8_converged=np.array([[True, True], [True, False]]),
             d16_test_error=te[16], d16_converged=np.array([[True, True]]))
    runs, meta = deciding_run(tmp_path / "run.npz")
    assert {k: meta[k] for k in ("command", "commit", "machine", "seconds")} == {
        "command": "python x.py --d 8 16", "commit": "a" * 40, "machine": "test box", "seconds": 12.5}
    assert meta["mismatch"] == []  # no parameters asked for
    assert sorted(runs) == [8, 16] and set(runs[8]) == {"test_error", "converged"}
    for d in (8, 16):
        np.testing.assert_array_equal(runs[d]["test_error"], te[d])
    assert runs[8]["converged"].tolist() == [[True, True], [True, False]]


def test_gd_gap_leaves_out_seeds_without_a_finite_error_and_counts_them():
    """Seed 1 at d = 8 has a NaN GD error: it is left out of the mean (brute force over the
    others) and counted with its reason."""
    from stumplib.phase.minimise import gd_gap

    te = np.array([[0.2, 0.4], [0.2, 0.4], [0.25, 0.5]])
    gd = np.array([[0.22, 0.42], [np.nan, 0.5], [0.3, 0.55]])
    runs = {8: dict(test_error=te, gd_test_error=gd, gd_rel_grad=np.array([1e-3, 2e-3, 4e-3])),
            16: dict(test_error=te, gd_test_error=te * 1.1, gd_rel_grad=np.array([1e-4] * 3))}
    g = gd_gap(runs)
    np.testing.assert_allclose(g["rel_diff"][0], (gd[[0, 2]] / te[[0, 2]] - 1).mean(0), rtol=1e-14)
    np.testing.assert_allclose(g["rel_diff"][1], [0.1, 0.1], rtol=1e-12)
    assert g["n_seeds"].tolist() == [2, 3] and g["n_dropped"].tolist() == [1, 0]
    assert g["dropped"].startswith("1 of 3 seeds at d = 8") and g["rel_grad_max"] == 4e-3


def test_stability_by_dynamics_leaves_out_runs_that_did_not_converge(monkeypatch):
    """A run reported as not converged is left out of the medians and counted."""
    import stumplib.phase.minimise as mi
    from stumplib.phase.replica import solve_fixed_rule

    fp = solve_fixed_rule(1.5, omega=0.3, branch="semantic", n_nodes=6)
    pt = dict(omega=0.3, alpha=1.5, theta=float(fp["theta"]), q=float(fp["q"]), derivative=-1.6)
    seen, real = [], mi.minimise

    def flaky(pb, s, n, Q0, **kw):
        r = real(pb, s, n, Q0, **kw)
        seen.append(float(mi.summaries(r["Q"][None], pb.q_star[s:s + 1], 0.5)["m"][0]))
        if pb.d == 20 and s == 0:  # seed 0 at d = 20 reported as not converged
            r = dict(r, converged=False)
        return r

    monkeypatch.setattr(mi, "minimise", flaky)
    row = mi.stability_by_dynamics([pt], [20], 3, cache=False)[0]
    assert row["not converged"] == 1
    assert row["|m| sqrt(d), d = 20"] == pytest.approx(
        float(np.median(np.abs(seen[1:]))) * np.sqrt(20), rel=1e-12)


def test_the_committed_deciding_run_reads_back_with_its_provenance(tmp_path):
    """``deciding_run`` reads ``scripts/PHASE_MINIMISERS_4000.npz`` as :func:`study` returns runs,
    with the command, commit and machine that made it, the model it was run at (the chapter's
    defaults) and one source line per contributing process; every seed appears once per ``d``;
    a missing file gives ``None``."""
    from stumplib.phase.minimise import DECIDING_RUN, deciding_run, read_runs

    assert DECIDING_RUN.is_file() and deciding_run(tmp_path / "none.npz") is None
    runs, meta = deciding_run(expect=dict(omega=0.3, sigma=0.5, lam=0.01, A=A))
    assert {250, 500, 1000, 2000, 4000} <= set(runs) and meta["mismatch"] == []
    assert "scripts/phase_minimisers.py" in meta["command"] and len(meta["commit"]) >= 40
    assert meta["seconds"] > 0 and meta["machine"] and len(meta["sources"]) >= 2
    assert meta["params"]["gtol"] == 1e-8 and len(meta["params"]["code_version"]) == 16
    with np.load(DECIDING_RUN) as flat:
        again = read_runs(flat)
    for d in runs:
        assert set(runs[d]) == set(again[d]) and "test_error" in runs[d]
        np.testing.assert_array_equal(runs[d]["test_error"], again[d]["test_error"])
        seeds = runs[d]["seeds"]
        assert np.unique(seeds).size == seeds.size and runs[d]["ran"].shape == runs[d]["test_error"].shape
        made = runs[d]["ran"]
        assert np.isfinite(runs[d]["test_error"][made]).all() and np.isnan(runs[d]["test_error"][~made]).all()


def test_three_extrapolations_on_data_with_a_known_one_over_d_squared_term():
    """y = L + a/d + b/d^2 at d = 250 ... 4000 with seed-like errors (se ~ d^-1/2): the parabola in
    1/d recovers L exactly without noise and its 95% interval covers L in 95% of noisy replicates
    (400 replicates: binomial sd 1.1%, so >= 91%); its z-scores have unit spread (the stated error
    is the spread, within 10%: the sd of 400 z-scores is known to 3.5%). The straight line is biased
    by the 1/d^2 term (3.5 of its standard errors here, computed), the line without the smallest d
    less (1.3)."""
    from stumplib.phase.minimise import extrapolations

    ds = np.array([250, 500, 1000, 2000, 4000.0])
    L, a, b = 0.0028, 0.02, 5.0
    se = 2e-6 * np.sqrt(4000 / ds)
    y = L + a / ds + b / ds ** 2
    ex = extrapolations(ds, y[:, None], se[:, None])
    assert set(ex) == {"line", "quadratic", "drop_smallest"}
    assert ex["quadratic"][0][0].value == pytest.approx(L, abs=1e-15)
    z = {k: (lim[0].value - L) / s[0] for k, (lim, s) in ex.items()}
    assert z["line"] < -3 and -3 < z["drop_smallest"] < -1  # the 1/d^2 term biases the lines
    rng = np.random.default_rng(0)
    noisy = y[:, None] + se[:, None] * rng.standard_normal((5, 400))  # 400 replicates as columns
    lim, s = extrapolations(ds, noisy, np.repeat(se[:, None], 400, 1))["quadratic"]
    zq = (np.array([e.value for e in lim]) - L) / s
    assert sum(e.contains(L) for e in lim) >= 364 and np.std(zq) == pytest.approx(1.0, rel=0.1)
    few = extrapolations(ds[:2], y[:2, None], se[:2, None])  # two d: no parabola, one point left
    assert np.isnan(few["quadratic"][1][0]) and np.isnan(few["drop_smallest"][1][0])
    assert np.isfinite(few["line"][1][0])


def _flat_run(lam=0.01, params=True):
    """A stored run in scripts/phase_minimisers.py's layout, two d, two alphas."""
    rng = np.random.default_rng(1)
    flat = dict(ds=np.array([100, 200]), command=np.asarray("python3 scripts/phase_minimisers.py"),
                commit=np.asarray("0" * 40), machine=np.asarray("test"), seconds=np.asarray(1.0))
    for d in (100, 200):
        te = 0.0028 + 1e-4 * rng.standard_normal((6, 2))
        flat.update({f"d{d}_test_error": te, f"d{d}_converged": np.ones((6, 2), bool),
                     f"d{d}_alphas": np.array([1.0164, 1.25]), f"d{d}_seeds": np.arange(6)})
    if params:
        flat.update(omega=np.asarray(0.3), sigma=np.asarray(0.5), lam=np.asarray(lam),
                    A=np.array([[0.6, 0.4], [0.4, 0.6]]), seed=np.asarray(0), gtol=np.asarray(1e-8))
    return flat


def test_a_stored_run_with_another_lambda_is_refused(tmp_path):
    """The page's lambda is 0.01; a file run at lambda = 0.02 is refused with the parameter named,
    or flagged when not strict; a file that recorded no parameters is refused too."""
    from stumplib.phase.minimise import deciding_run

    page = dict(omega=0.3, sigma=0.5, lam=0.01, A=A)
    for name, flat in (("ok", _flat_run()), ("lam", _flat_run(lam=0.02)), ("old", _flat_run(params=False))):
        np.savez(tmp_path / f"{name}.npz", **flat)
    runs, meta = deciding_run(tmp_path / "ok.npz", expect=page)
    assert meta["mismatch"] == [] and meta["params"]["lam"] == 0.01 and sorted(runs) == [100, 200]
    with pytest.raises(ValueError, match=r"lam = 0.02 \(this page: 0.01\)"):
        deciding_run(tmp_path / "lam.npz", expect=page)
    _, meta = deciding_run(tmp_path / "lam.npz", expect=page, strict=False)
    assert meta["mismatch"] == ["lam = 0.02 (this page: 0.01)"]
    with pytest.raises(ValueError, match="parameters not recorded"):
        deciding_run(tmp_path / "old.npz", expect=page)
    assert deciding_run(tmp_path / "old.npz")[1]["mismatch"] == []  # no check asked


def test_at_alphas_selects_columns_and_marks_a_missing_alpha_as_not_run():
    from stumplib.phase.minimise import at_alphas, read_runs

    flat = _flat_run()
    flat["d200_test_error"] = flat["d200_test_error"][:, :1]  # alpha 1.25 not run at d = 200
    flat["d200_converged"] = flat["d200_converged"][:, :1]
    flat["d200_alphas"] = np.array([1.0164])
    sel = at_alphas(read_runs(flat), [1.25, 1.0164])
    np.testing.assert_array_equal(sel[100]["test_error"], flat["d100_test_error"][:, ::-1])
    assert np.isnan(sel[200]["test_error"][:, 0]).all() and not sel[200]["converged"][:, 0].any()
    np.testing.assert_array_equal(sel[200]["test_error"][:, 1], flat["d200_test_error"][:, 0])
    assert at_alphas(read_runs(flat), [2.0]) == {}


def test_make_problem_draws_on_the_cpu_from_the_seed():
    # seed s of chapter seed k: teacher then tokens from one CPU generator seeded k * 1000 + s
    gen = torch.Generator(device="cpu").manual_seed(2 * 1000 + 3)
    q = torch.randn(30, generator=gen, dtype=torch.float64)
    z = 0.5 * torch.randn(40, 2, 30, generator=gen, dtype=torch.float64)
    pb = make_problem(30, [0, 3], 40, seed=2)
    assert torch.equal(pb.q_star[1], q) and torch.equal(pb.Gzz[1], z @ z.transpose(-1, -2))


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_make_problem_gives_cuda_the_cpu_data():
    cpu, gpu = make_problem(30, [0, 3], 40, seed=2), make_problem(30, [0, 3], 40, seed=2, device="cuda")
    assert torch.equal(gpu.q_star.cpu(), cpu.q_star) and torch.equal(gpu.X.cpu(), cpu.X)
