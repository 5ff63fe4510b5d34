"""Chapter 6's flat window: the landscape along theta at finite d and in the theory.

At ``alpha = 1.0164`` (omega = 0.3), for each dimension ``d`` and seed, the regularised empirical
risk is minimised with the semantic overlap ``theta = sigma^2 Q*.Q / d`` held at each value of a
window (:func:`stumplib.phase.held_theta.landscape`: L-BFGS on the constraint plane, two sweeps,
the lower kept), with the unconstrained minimiser from ``Q = Q*`` and the lowest minimiser found.
The theory's constrained training loss along the same window
(:func:`stumplib.phase.held_theory.held_theory`, one curve per scrambling of a Sobol rule) is
computed first. Results go to ``--out`` (rewritten after each stage, so a stopped run keeps what it
finished) with the command, the commit, the machine, the run time and every model parameter.
Chapter 6 reads this file; its ``full`` profile recomputes it.

Usage (one CPU thread):

    OMP_NUM_THREADS=1 python3 scripts/phase_flat_window.py --d 500 1000 2000 --seeds 24 12 8 \\
        --out scripts/PHASE_FLAT_WINDOW.npz
"""
from __future__ import annotations

import argparse
import platform
import re
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from stumplib.phase.held_theory import held_theory  # noqa: E402
from stumplib.phase.held_theta import landscape  # noqa: E402

A = ((0.6, 0.4), (0.4, 0.6))


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--d", type=int, nargs="+", default=[500, 1000, 2000])
    ap.add_argument("--seeds", type=int, nargs="+", default=[24, 12, 8],
                    help="seeds per dimension (one value, or one per --d)")
    ap.add_argument("--alpha", type=float, default=1.0164)
    ap.add_argument("--theta-range", type=float, nargs=3, default=[0.080, 0.116, 9],
                    help="first, last held theta and their number")
    ap.add_argument("--theory-log2", type=int, default=13)
    ap.add_argument("--theory-scramblings", type=int, default=8)
    ap.add_argument("--omega", type=float, default=0.3)
    ap.add_argument("--sigma", type=float, default=0.5)
    ap.add_argument("--lam", type=float, default=0.01)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--gtol", type=float, default=1e-8)
    ap.add_argument("--stages", nargs="+", default=["theory", "landscape"],
                    choices=["theory", "landscape", "root", "control"],
                    help="root: the theory along a narrow window with a finer rule (the second "
                    "route to the fixed point)")
    ap.add_argument("--root-window", type=float, nargs=3, default=[0.0955, 0.0985, 4])
    ap.add_argument("--root-log2", type=int, default=14)
    ap.add_argument("--root-scramblings", type=int, default=4)
    ap.add_argument("--control", type=float, nargs=6, default=[2.0, 500, 8, 0.146, 0.170, 5],
                    help="control stage: alpha, d, seeds, first and last theta, their number "
                    "(a point outside the window: landscape and theory should agree there)")
    ap.add_argument("--seed-offset", type=int, default=0,
                    help="first seed (with --resume, new seeds join a d already in --out)")
    ap.add_argument("--resume", action="store_true",
                    help="keep what --out holds and add the stages run now")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--out", default="scripts/PHASE_FLAT_WINDOW.npz")
    a = ap.parse_args(argv)
    seeds = a.seeds * len(a.d) if len(a.seeds) == 1 else a.seeds
    if len(seeds) != len(a.d):
        raise SystemExit("--seeds: one value or one per --d")
    thetas = np.linspace(a.theta_range[0], a.theta_range[1], int(a.theta_range[2]))
    torch.set_num_threads(1)
    commit = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True,
                            cwd=Path(__file__).parent).stdout.strip()
    meta = dict(command=" ".join(["python3", "scripts/phase_flat_window.py"] + sys.argv[1:]),
                commit=commit, machine=f"{platform.node()}: {platform.processor() or platform.machine()}, "
                f"{a.device}, torch {torch.__version__}, 1 thread")
    model = dict(alpha=a.alpha, omega=a.omega, sigma=a.sigma, lam=a.lam, A=np.asarray(A), seed=a.seed,
                 gtol=a.gtol, thetas=thetas)
    out: dict[str, np.ndarray] = {}
    t_all, t_before = time.time(), 0.0
    if a.resume and Path(a.out).is_file():
        with np.load(a.out) as f:
            out = {k: np.asarray(f[k]) for k in f.files}
        t_before = float(out.pop("seconds"))
        old = {k: str(out.pop(k)) for k in ("command", "commit", "machine")}
        for k in list(model):
            v = out.pop(k)
            if k in ("alpha", "omega", "sigma", "lam", "seed") and not np.allclose(v, model[k]):
                raise SystemExit(f"--resume: {a.out} holds {k} = {v}, this run {model[k]}")
            if k == "thetas":
                model[k] = v  # the landscape's window stays the file's
        out.update({f"{a.stages[0]}_{k}": np.asarray(v) for k, v in meta.items()})
        meta = old
    hk = dict(omega=a.omega, sigma=a.sigma, lam=a.lam, A=A, seed=a.seed)

    def save() -> None:
        out["ds"] = np.asarray(sorted(int(k[1:-len("_seconds")]) for k in out
                                      if re.fullmatch(r"d\d+_seconds", k)))
        np.savez(a.out, **out, **{k: np.asarray(v) for k, v in meta.items()},
                 **{k: np.asarray(v) for k, v in model.items()},
                 seconds=np.asarray(t_before + time.time() - t_all))

    def stage(name: str, compute) -> None:
        """Run one stage, store its results under their prefixes, save and report."""
        t0 = time.time()
        for prefix, r in compute().items():
            out.update({f"{prefix}_{k}": np.asarray(v) for k, v in r.items()})
        out[f"{name}_seconds"] = np.asarray(time.time() - t0)
        save()
        print(f"{name}: {time.time() - t0:.0f} s", flush=True)

    if "root" in a.stages:
        rw = np.linspace(a.root_window[0], a.root_window[1], int(a.root_window[2]))
        stage("root", lambda: {"root": held_theory(a.alpha, rw, log2_points=a.root_log2,
                                                   n_scramblings=a.root_scramblings, **hk)})
    if "control" in a.stages:
        ca, cd, cs = a.control[0], int(a.control[1]), int(a.control[2])
        cw = np.linspace(a.control[3], a.control[4], int(a.control[5]))
        stage("control", lambda: {
            "control_theory": held_theory(ca, cw, log2_points=a.theory_log2,
                                          n_scramblings=a.theory_scramblings, **hk),
            "control_land": landscape(ca, cd, list(range(cs)), cw, gtol=a.gtol, device=a.device,
                                      **hk)})
    if "theory" in a.stages:
        stage("theory", lambda: {"theory": held_theory(a.alpha, thetas, log2_points=a.theory_log2,
                                                       n_scramblings=a.theory_scramblings, **hk)})
    for d, ns in zip(a.d, seeds) if "landscape" in a.stages else ():
        t0 = time.time()
        r = landscape(a.alpha, d, list(range(a.seed_offset, a.seed_offset + ns)), model["thetas"],
                      gtol=a.gtol, device=a.device, **hk)
        old = {k[len(f"d{d}_"):]: v for k, v in out.items() if k.startswith(f"d{d}_")}
        if old:  # more seeds at a d already recorded: join them along the seed axis
            if not np.allclose(old["thetas"], r["thetas"]) or set(old["seeds"]) & set(r["seeds"]):
                raise SystemExit(f"d = {d}: the new seeds repeat old ones or the window differs")
            r = {k: (np.concatenate([old[k], v]) if np.ndim(v) and k != "thetas" else v)
                 for k, v in r.items()}
        out.update({f"d{d}_{k}": np.asarray(v) for k, v in r.items()})
        out[f"d{d}_seconds"] = np.asarray(time.time() - t0 + float(old.get("seconds", 0.0)))
        save()
        print(f"d={d}: {ns} seeds in {time.time() - t0:.0f} s; converged {r['converged'].mean():.3f}; "
              f"sweeps differ {r['sweeps_differ'].mean():.3f}; free theta {r['free_theta'].mean():.4f}, "
              f"best theta {r['best_theta'].mean():.4f}", flush=True)


if __name__ == "__main__":
    main()
