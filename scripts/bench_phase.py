"""Benchmark of stumplib.phase: the accuracy-controlled state evolution, seconds per alpha point.

Usage: python scripts/bench_phase.py [--rtol 1e-3] [--n 20] [--lo 1.0] [--hi 2.3] [--branch semantic]

A sweep of ``n`` alphas evenly spaced in ``[lo, hi]`` at omega = 0.3 (continuation from the largest
alpha down), as the chapter runs it; prints seconds per point (mean and median), the achieved
relative accuracy of the test error, the number of points per scrambling and the outcome per alpha
(a Markdown table, pasted into ``scripts/BENCH_phase.md``). The machine is shared, so timings are
noisy: the load average at the start is printed.
"""
from __future__ import annotations

import argparse
import os
import platform
import statistics
import time

import numpy as np

from stumplib.phase import state_evolution
from stumplib.validation import check_choice, check_int, check_real


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rtol", type=float, default=1e-3)
    ap.add_argument("--n", type=int, default=20)
    ap.add_argument("--lo", type=float, default=1.0)
    ap.add_argument("--hi", type=float, default=2.3)
    ap.add_argument("--branch", default="semantic")
    ap.add_argument("--omega", type=float, default=0.3)
    ap.add_argument("--max-log2", type=int, default=16)
    a = ap.parse_args()
    rtol = check_real("rtol", a.rtol, low=1e-5, high=0.1)
    n = check_int("n", a.n, minimum=1, maximum=1000)
    branch = check_choice("branch", a.branch, ("semantic", "positional"))
    alphas = np.linspace(a.lo, a.hi, n)
    load = os.getloadavg()[0]
    t0 = time.perf_counter()
    r = state_evolution(alphas, omega=a.omega, branch=branch, rtol=rtol, max_log2_points=a.max_log2,
                        on_accuracy="undecided")
    total = time.perf_counter() - t0
    acc = r["test_error_err"] / r["test_error"]
    lines = [f"Sweep: {n} alphas in [{a.lo}, {a.hi}], {branch} branch, omega = {a.omega}, rtol = {rtol}; "
             f"{platform.machine()}, {os.cpu_count()} cores shared (load average {load:.1f} at the start), "
             f"one thread.", "",
             f"total {total:.1f} s: {total / n:.2f} s per point (mean), "
             f"{statistics.median(r['seconds']):.2f} s (median)", "",
             "| alpha | outcome | points per scrambling | updates | seconds | test error | achieved rel. error |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    for i in range(n):
        lines.append(f"| {alphas[i]:.3f} | {r['outcome'][i]} | 2^{r['log2_points'][i]} | {r['n_updates'][i]} | "
                     f"{r['seconds'][i]:.2f} | {r['test_error'][i]:.6f} | {acc[i]:.1e} |")
    text = "\n".join(lines) + "\n"
    print(text)


if __name__ == "__main__":
    main()
