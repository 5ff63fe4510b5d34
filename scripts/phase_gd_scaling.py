"""Gradient descent against the accurate and the published theory as d grows (chapter 6's full-profile question).

Full-batch GD of the attention student (:func:`stumplib.phase.attention.train_attention_gd`: step
0.15, lambda = 0.01, sigma = 0.5, omega = 0.3, A = [[0.6, 0.4], [0.4, 0.6]], semantic initialisation
Q = Q*, seeds ``seed * 1000 + s`` as in chapter 6) at the two sample ratios of chapter 6 (1.0164 and
1.25, published alphas), for each d, with the test error recorded at checkpoints (the same test
draws each time, so its change between checkpoints shows whether the runs still move). Prints a
Markdown table per d: mean test error +- standard error over seeds at each checkpoint, the largest
final gradient norm and the fraction of runs below ``--grad-tol``; and the theory: the accurate
state evolution (:func:`stumplib.phase.state_evolution`, rtol 1e-3, with its quadrature error) and
the published point; ``z`` is the distance of GD's final mean from each in combined standard errors.
Results also go to ``--out`` (one .npz per d).

Usage (the runs recorded in ``scripts/PHASE_GD.md``):

    python scripts/phase_gd_scaling.py --d 250,500,1000 --seeds 16 --steps 20000 --device cpu
    python scripts/phase_gd_scaling.py --d 250,500,1000,2000 --seeds 16 --steps 20000 --device cuda
"""
from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from stumplib.phase import AttentionGDOptions, SolverOptions, check_model, state_evolution
from stumplib.phase.attention import train_attention_gd
from stumplib.book.studies.published import FILES, read_published, reference_file
from stumplib.core.validation import check_int, check_real

ALPHAS = (1.0164, 1.25)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--d", default="250,500,1000", help="comma-separated dimensions")
    ap.add_argument("--seeds", type=int, default=16)
    ap.add_argument("--steps", type=int, default=20000)
    ap.add_argument("--n-test", type=int, default=50000)
    ap.add_argument("--grad-tol", type=float, default=1e-4)
    ap.add_argument("--device", default="auto")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--ref", default=None,
                    help="folder of the published files (default: the copies shipped with stumplib)")
    ap.add_argument("--out", default="phase_gd_out")
    a = ap.parse_args()
    try:
        ds = [check_int("d", int(v), minimum=10, maximum=100_000) for v in a.d.split(",")]
    except ValueError as e:
        raise SystemExit(f"--d: comma-separated integers >= 10; got {a.d!r} ({e})")
    seeds = check_int("seeds", a.seeds, minimum=2, maximum=10_000)
    steps = check_int("steps", a.steps, minimum=8, maximum=10_000_000)
    n_test = check_int("n_test", a.n_test, minimum=100)
    grad_tol = check_real("grad_tol", a.grad_tol, low=0.0, low_open=True)
    ckpts = sorted({steps // 8, steps // 4, steps // 2, steps})
    out_dir = Path(a.out)
    out_dir.mkdir(parents=True, exist_ok=True)

    t0 = time.perf_counter()
    th = state_evolution(np.array(ALPHAS), model=check_model(omega=0.3),
                         options=SolverOptions(rtol=1e-3))
    print(f"accurate theory ({time.perf_counter() - t0:.0f} s): " + ", ".join(
        f"alpha={al}: {te:.6f} +- {er:.6f} ({oc})" for al, te, er, oc in
        zip(ALPHAS, th["test_error"], th["test_error_err"], th["outcome"])), flush=True)
    pub = None
    ref = reference_file(FILES["sem"]) if a.ref is None else Path(a.ref) / FILES["sem"]
    if ref.is_file():
        d_ = read_published(ref)
        pub = [float(d_["mse"][np.argmin(np.abs(d_["alpha"] - al))] / 2) for al in ALPHAS]
        print("published theory: " + ", ".join(f"alpha={al}: {v:.6f}" for al, v in zip(ALPHAS, pub)), flush=True)
    else:
        print(f"published theory: no file {ref} (--ref), so the z (published) column is NaN", flush=True)

    for d in ds:
        t0 = time.perf_counter()
        r = train_attention_gd(list(ALPHAS), d, seeds=seeds, inits=("semantic",),
                               device=a.device, seed=a.seed, model=check_model(omega=0.3),
                               options=AttentionGDOptions(steps=steps, n_test=n_test,
                                                          checkpoints=ckpts, progress=True))
        secs = time.perf_counter() - t0
        np.savez(out_dir / f"gd_d{d}.npz", **r)
        print(f"\n### d = {d} ({seeds} seeds, {steps} steps, {secs:.0f} s)\n")
        print("| alpha | " + " | ".join(f"test error at {c}" for c in ckpts)
              + " | largest final gradient norm | runs below tol | z (accurate) | z (published) |")
        print("| --- " * (len(ckpts) + 5) + "|")
        for j, al in enumerate(ALPHAS):
            cells = []
            for c in range(len(ckpts)):
                x = r["test_error_at"][c, :, j, 0]
                cells.append(f"{x.mean():.6f} +- {x.std(ddof=1) / np.sqrt(seeds):.6f}")
            x = r["test_error"][:, j, 0]
            se = x.std(ddof=1) / np.sqrt(seeds)
            gn = r["grad_norm"][:, j, 0]
            z_acc = (x.mean() - th["test_error"][j]) / np.hypot(se, th["test_error_err"][j])
            z_pub = (x.mean() - pub[j]) / se if pub is not None else float("nan")
            print(f"| {al} | " + " | ".join(cells) + f" | {gn.max():.1e} | {np.mean(gn < grad_tol):.0%} | "
                  f"{z_acc:+.1f} | {z_pub:+.1f} |", flush=True)


if __name__ == "__main__":
    main()
