"""Benchmark of stumplib.phase: the accuracy-controlled state evolution, seconds per alpha point.

Usage: python scripts/bench_phase.py [--rtol 1e-3] [--n 20] [--lo 1.0] [--hi 2.3] [--branch semantic]
                                     [--omega 0.3] [--max-log2 16] [--scramblings 12] [--repeat 1]
                                     [--threads 1,0]

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
"""
from __future__ import annotations

import argparse
import os
import platform
import statistics
import time

import numpy as np

from stumplib.phase import state_evolution
from stumplib.phase.se import num_threads
from stumplib.phase.solver import _evaluate, _pooled_nodes
from stumplib.validation import check_choice, check_int, check_real


def pass_cost(alpha: float, z: np.ndarray, p: int, K: int, omega: float) -> tuple[float, float]:
    """Seconds of one multi-start update and of one update followed from its minimisers (median of 3)
    at the pooled rule of K 2^p points, at the overlaps ``z``."""
    kw = dict(omega=omega, sigma=0.5, lam=0.01, A=np.array([[0.6, 0.4], [0.4, 0.6]]))
    nodes = _pooled_nodes(p, K, 0)
    t0 = time.perf_counter()
    ev = _evaluate(alpha, z[None], nodes, K, kw, None, None, restart=True)
    t_multi = time.perf_counter() - t0
    zz = z * (1 + 1e-3)
    ts = []
    for _ in range(3):
        t0 = time.perf_counter()
        _evaluate(alpha, zz[None], nodes, K, kw, ev["prox"][0], None, restart=False)
        ts.append(time.perf_counter() - t0)
    return t_multi, statistics.median(ts)


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
    a = ap.parse_args()
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
            r = state_evolution(alphas, omega=a.omega, branch=branch, rtol=rtol, max_log2_points=a.max_log2,
                                n_scramblings=K, on_accuracy="undecided")
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
