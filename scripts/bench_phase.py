"""Benchmark of stumplib.phase: the accuracy-controlled state evolution, seconds per alpha point.

Usage: python scripts/bench_phase.py [--rtol 1e-3] [--n 20] [--lo 1.0] [--hi 2.3] [--branch semantic]
                                     [--omega 0.3] [--max-log2 16] [--scramblings 12] [--repeat 1]
                                     [--threads 1,0]
       python scripts/bench_phase.py --outputs NEW.json [--against OLD.json]

A sweep of ``n`` alphas evenly spaced in ``[lo, hi]`` (continuation from the largest alpha down), as
the chapter runs it; prints, per alpha, the outcome, the points per scrambling, the map evaluations,
the seconds and the achieved relative error of the test error, then seconds per point (mean and
median, per repeat) and, as a yardstick, the cost of one pass of proximal solves over the pooled rule
(one update with every proximal problem followed from its minimiser, and one with the full
multi-start search) at the sizes the sweep used. The sweep runs once per entry of ``--threads``
(``STUMPLIB_THREADS``; 0: every core this process may use), and the table is the last run's. A
Markdown table, pasted into
``scripts/BENCH_phase.md``. The machine is shared, so timings are noisy: the load average before
and after is printed.

With ``--outputs``, the regression set instead (for refactoring the solver: numbers must not move):
``state_evolution`` on 8 alphas in [1, 2.3] at omega = 0.3, both branches, rtol 1e-3 and 5e-3; one
scalar call (alpha = 2, seed 1, rtol 3e-4); two alphas below the semantic branch's end; the other
paths (no continuation, a given start, an asymmetric ``A``, no stability rows, three points near
the semantic branch's end); and
``solve_fixed_rule`` on a few points of both branches with the Gauss-Hermite, Stroud-Secrest and Sobol
rules. Every output except the wall times is written to the JSON file with the seconds of each call;
``--against`` compares with an earlier file (bit for bit, else the largest relative difference) and
prints both files' seconds.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time

import numpy as np

from stumplib.phase import SolverOptions, check_model, state_evolution
from stumplib.phase.parallel import num_threads
from stumplib.phase.replica import solve_fixed_rule
from stumplib.phase.solver_qmc import pooled_nodes, pooled_update
from stumplib.core.validation import check_choice, check_int, check_real


def pass_cost(alpha: float, z: np.ndarray, p: int, K: int, omega: float) -> tuple[float, float]:
    """Seconds of one multi-start update and of one update followed from its minimisers (median of 3)
    at the pooled rule of K 2^p points, at the overlaps ``z``."""
    kw = dict(omega=omega, sigma=0.5, lam=0.01, A=np.array([[0.6, 0.4], [0.4, 0.6]]))
    nodes = pooled_nodes(p, K, 0)
    t0 = time.perf_counter()
    ev = pooled_update(alpha, z[None], nodes, K, kw, None, None, restart=True)
    t_multi = time.perf_counter() - t0
    zz = z * (1 + 1e-3)
    ts = []
    for _ in range(3):
        t0 = time.perf_counter()
        pooled_update(alpha, zz[None], nodes, K, kw, ev["prox"][0], None, restart=False)
        ts.append(time.perf_counter() - t0)
    return t_multi, statistics.median(ts)


def _jsonable(v) -> list:
    """An output as a JSON list (NaN as None, strings as strings)."""
    v = np.atleast_1d(np.asarray(v))
    if v.dtype == object or v.dtype.kind in "US":
        return [str(x) for x in v.tolist()]
    if v.dtype == bool:
        return v.tolist()
    return [None if np.isnan(x) else x for x in v.astype(float).tolist()]


def regression_outputs() -> dict:
    """The regression set (see the module's docstring): {"out": {call: {output: list}}, "times":
    {call: wall seconds}, "cpu": {call: CPU seconds of this process}}."""
    out, times, cpu = {}, {}, {}

    def run(name, fn, *args, **kw):
        t0, c0 = time.perf_counter(), time.process_time()
        r = fn(*args, **kw)
        times[name], cpu[name] = time.perf_counter() - t0, time.process_time() - c0
        out[name] = {k: _jsonable(v) for k, v in r.items() if k != "seconds"}
        print(f"{name}: {times[name]:.1f} s ({cpu[name]:.1f} s CPU)", flush=True)

    alphas = np.linspace(1.0, 2.3, 8)
    for br in ("semantic", "positional"):
        for rtol in (1e-3, 5e-3):
            run(f"se_{br}_{rtol}", state_evolution, alphas, omega=0.3, branch=br, rtol=rtol,
                on_accuracy="undecided")
    run("se_scalar", state_evolution, 2.0, omega=0.3, branch="semantic", rtol=3e-4, seed=1)
    run("se_low", state_evolution, [0.3, 0.5], omega=0.3, branch="semantic", rtol=3e-3, max_log2_points=12,
        on_accuracy="undecided")
    # the other paths: no continuation, a given start, an asymmetric A (m free), no stability rows,
    # points near the branch's end (two-level check, undecided)
    run("se_nocont", state_evolution, [2.0, 1.7, 1.4], omega=0.3, rtol=1e-2, continuation=False)
    run("se_init", state_evolution, [1.9, 1.5], omega=0.3, rtol=1e-2, init=dict(q=0.1, m=0.0, V=3.0, theta=0.12))
    run("se_asym", state_evolution, [2.0, 1.8], omega=0.3, rtol=1e-2, A=((0.7, 0.3), (0.4, 0.6)))
    run("se_pos_nostab", state_evolution, [2.0, 1.2, 0.8], omega=0.3, branch="positional", rtol=1e-2,
        stability=False, on_accuracy="undecided")
    run("se_edge", state_evolution, [1.0, 0.8, 0.6], omega=0.3, rtol=5e-3, max_log2_points=13,
        on_accuracy="undecided")
    for br in ("semantic", "positional"):
        run(f"fixed_{br}", solve_fixed_rule, [0.5, 1.0, 2.0, 3.0], omega=0.3, branch=br, n_nodes=6)
        run(f"fixed_{br}_stroud", solve_fixed_rule, [0.5, 1.5], omega=0.3, branch=br, rule="stroud", tol=1e-8,
            max_iter=3000)
        run(f"fixed_{br}_sobol", solve_fixed_rule, 1.2, omega=0.3, branch=br, rule="sobol", n_nodes=10)
    run("fixed_init_asym", solve_fixed_rule, [2.0, 3.0], omega=0.3, A=((0.65, 0.35), (0.4, 0.6)), n_nodes=6,
        max_iter=2000, init=dict(q=[0.1, 0.1], m=[0.01, 0.01], V=[5.0, 5.0], theta=[0.1, 0.1]))
    return dict(out=out, times=times, cpu=cpu)


def compare_outputs(old: dict, new: dict) -> list[str]:
    """Lines saying whether ``new``'s outputs equal ``old``'s bit for bit (else the largest relative
    difference and every differing string), and both runs' seconds per call."""
    worst, same, lines = 0.0, True, []
    for call, outs in old["out"].items():
        for key, xs in outs.items():
            ys = new["out"].get(call, {}).get(key)
            if ys is None or len(ys) != len(xs):
                lines.append(f"{call}.{key}: missing or of another length")
                same = False
                continue
            for x, y in zip(xs, ys):
                if x == y:
                    continue
                same = False
                if isinstance(x, (int, float)) and isinstance(y, (int, float)) and not isinstance(x, bool):
                    worst = max(worst, abs(x - y) / max(abs(x), 1e-300))
                else:
                    lines.append(f"{call}.{key}: {x!r} -> {y!r}")
    lines.insert(0, "outputs bit-identical" if same else f"outputs differ: largest relative difference {worst:.2e}")
    cpu_old, cpu_new = old.get("cpu", {}), new.get("cpu", {})
    lines += [f"  {call}: {old['times'][call]:.1f} s -> {new['times'].get(call, float('nan')):.1f} s wall, "
              f"{cpu_old.get(call, float('nan')):.1f} s -> {cpu_new.get(call, float('nan')):.1f} s CPU"
              for call in old["times"]]
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rtol", type=float, default=1e-3)
    ap.add_argument("--n", type=int, default=20)
    ap.add_argument("--lo", type=float, default=1.0)
    ap.add_argument("--hi", type=float, default=2.3)
    ap.add_argument("--branch", default="semantic")
    ap.add_argument("--omega", type=float, default=0.3)
    ap.add_argument("--max-log2", type=int, default=16)
    ap.add_argument("--scramblings", type=int, default=12)
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--threads", default="1,0", help="comma-separated thread counts (0: all cores)")
    ap.add_argument("--outputs", default=None, help="write the regression set's outputs to this JSON file")
    ap.add_argument("--against", default=None, help="with --outputs: compare with this earlier JSON file")
    a = ap.parse_args()
    if a.outputs:
        res = regression_outputs()
        with open(a.outputs, "w") as fh:
            json.dump(res, fh)
        if a.against:
            with open(a.against) as fh:
                print("\n".join(compare_outputs(json.load(fh), res)))
        return
    rtol = check_real("rtol", a.rtol, low=1e-5, high=0.1)
    n = check_int("n", a.n, minimum=1, maximum=1000)
    K = check_int("scramblings", a.scramblings, minimum=3, maximum=32)
    repeat = check_int("repeat", a.repeat, minimum=1, maximum=10)
    try:
        threads = [check_int("threads", int(v), minimum=0, maximum=256) for v in a.threads.split(",")]
    except ValueError as e:
        raise SystemExit(f"--threads: comma-separated integers >= 0; got {a.threads!r} ({e})")
    branch = check_choice("branch", a.branch, ("semantic", "positional"))
    alphas = np.linspace(a.lo, a.hi, n)
    load0 = os.getloadavg()
    runs = []
    for nt in threads:
        if nt:
            os.environ["STUMPLIB_THREADS"] = str(nt)
        else:
            os.environ.pop("STUMPLIB_THREADS", None)
        for _ in range(repeat):
            t0 = time.perf_counter()
            r = state_evolution(alphas, on_accuracy="undecided",
                                model=check_model(omega=a.omega, branch=branch),
                                options=SolverOptions(rtol=rtol, max_log2_points=a.max_log2,
                                                      n_scramblings=K))
            runs.append((time.perf_counter() - t0, r, num_threads()))
    load1 = os.getloadavg()
    total, r, _ = runs[-1]
    acc = r["test_error_err"] / r["test_error"]
    conv = r["outcome"] == "converged"
    lines = [f"Sweep: {n} alphas in [{a.lo}, {a.hi}], {branch} branch, omega = {a.omega}, rtol = {rtol}, "
             f"K = {K} scramblings; {platform.machine()}, {os.cpu_count()} cores shared (load average "
             f"{load0[0]:.1f} before, {load1[0]:.1f} after).", ""]
    for j, (tt, rr, nt) in enumerate(runs):
        same = all(np.array_equal(rr[k], runs[0][1][k], equal_nan=True) for k in ("q", "V", "theta", "test_error"))
        lines.append(f"run {j + 1} ({nt} thread{'s' if nt > 1 else ''}): total {tt:.1f} s: {tt / n:.2f} s per point "
                     f"(mean), {statistics.median(rr['seconds']):.2f} s (median); {runs[0][0] / tt:.2f}x run 1's "
                     f"speed; outputs {'identical to' if same else 'DIFFERENT from'} run 1's")
    lines += ["", f"converged {int(conv.sum())} of {n}; achieved relative error of the test error "
              f"{np.nanmin(acc[conv]):.1e} to {np.nanmax(acc[conv]):.1e}" if conv.any() else "", ""]
    lines += ["| alpha | outcome | points per scrambling | map evaluations | seconds | test error | "
              "achieved rel. error | Jacobian eigenvalue |", "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for i in range(n):
        lines.append(f"| {alphas[i]:.3f} | {r['outcome'][i]} | 2^{r['log2_points'][i]} | {r['n_updates'][i]} | "
                     f"{r['seconds'][i]:.2f} | {r['test_error'][i]:.7f} | {acc[i]:.1e} | "
                     f"{r['jacobian_eigenvalue'][i]:.3f} |")
    lines += ["", "One pass of proximal solves over the pooled rule (yardstick):", "",
              "| points per scrambling | pooled points | multi-start update (s) | followed update (s) |",
              "| --- | --- | --- | --- |"]
    for p in sorted(set(int(v) for v in r["log2_points"][conv])):
        i = int(np.flatnonzero(conv & (r["log2_points"] == p))[0])
        z = np.array([r[k][i] for k in ("q", "m", "V", "theta")])
        tm, tw = pass_cost(float(alphas[i]), z, p, K, a.omega)
        lines.append(f"| 2^{p} | {K * 2 ** p} | {tm:.2f} | {tw:.3f} |")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
