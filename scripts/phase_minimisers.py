"""Chapter 6's deciding run: converged minimisers of the attention student at omega = 0.3.

For each dimension ``d`` (in increasing order) and each seed, the regularised empirical risk is
minimised from the semantic start (``Q = Q*``) at ``alpha = 1.0164`` and ``1.25`` with
:func:`stumplib.phase.minimise.minimiser_runs` (L-BFGS, Newton-CG finish, relative gradient 1e-8),
and each run's exact test error is recorded; the paper's plain GD (5 000 steps of 0.15) runs from
the same start on the first ``--gd-seeds`` seeds. Results go to ``--out`` (an ``.npz`` per
dimension, rewritten after each, so a stopped run keeps what it finished) with the command, the
commit, the machine and the run time. Chapter 6 reads this file and labels it as this script's.

Usage (one CPU thread; ``--device cuda`` on a GPU):

    OMP_NUM_THREADS=1 python3 scripts/phase_minimisers.py --d 250 500 1000 2000 --seeds 128 \
        --out scripts/PHASE_MINIMISERS.npz
"""
from __future__ import annotations

import argparse
import platform
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from stumplib.phase.minimise import minimiser_runs# noqa: E402


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--d", type=int, nargs="+", default=[250, 500, 1000, 2000])
    ap.add_argument("--seeds", type=int, nargs="+", default=[128],
                    help="seeds per dimension (one value, or one per --d)")
    ap.add_argument("--alphas", type=float, nargs="+", default=[1.0164, 1.25])
    ap.add_argument("--gd-seeds", type=int, default=8)
    ap.add_argument("--gd-steps", type=int, default=5000)
    ap.add_argument("--gd-max-d", type=int, default=1000, help="plain GD only up to this d")
    ap.add_argument("--omega", type=float, default=0.3)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--out", default="scripts/PHASE_MINIMISERS.npz")
    a = ap.parse_args(argv)
    seeds = a.seeds * len(a.d) if len(a.seeds) == 1 else a.seeds
    if len(seeds) != len(a.d):
        raise SystemExit("--seeds: one value or one per --d")
    torch.set_num_threads(1)
    commit = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True,
                            cwd=Path(__file__).parent).stdout.strip()
    meta = dict(command=" ".join(["python3", "scripts/phase_minimisers.py"] + sys.argv[1:]),
                commit=commit, machine=f"{platform.node()}: {platform.processor() or platform.machine()}, "
                f"{a.device}, torch {torch.__version__}, 1 thread")
    out: dict[str, np.ndarray] = {}
    t_all = time.time()
    for d, ns in zip(a.d, seeds):
        t0 = time.time()
        gd = a.gd_steps if d <= a.gd_max_d else 0
        r = minimiser_runs(a.alphas, d, ns, omega=a.omega, gd_steps=gd, gd_seeds=min(a.gd_seeds, ns),
                           device=a.device)
        for k, v in r.items():
            out[f"d{d}_{k}"] = v
        out[f"d{d}_seconds"] = np.asarray(time.time() - t0)
        out["ds"] = np.asarray([dd for dd in a.d if f"d{dd}_seconds" in out])
        np.savez(a.out, **out, **{k: np.asarray(v) for k, v in meta.items()},
                 seconds=np.asarray(time.time() - t_all), gd_steps=np.asarray(a.gd_steps))
        print(f"d={d}: {ns} seeds in {time.time() - t0:.0f} s; converged "
              f"{r['converged'].mean():.3f}; mean test error {r['test_error'].mean(0)}", flush=True)


if __name__ == "__main__":
    main()
