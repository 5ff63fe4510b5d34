"""Chapter 6's deciding run: converged minimisers of the attention student, as a sweep.

One task per dimension ``d`` and seed (``stumplib.sweep``): the regularised empirical risk of that
seed's data is minimised from the semantic start (``Q = Q*``) with
:func:`stumplib.phase.minimise.minimiser_runs` (L-BFGS, Newton-CG finish, relative gradient
``--gtol``) at every ``--alphas``, and each run's exact test error is recorded; the paper's plain
GD (``--gd-steps`` steps of 0.15) runs from the same start on seeds below ``--gd-seeds`` at
``d <= --gd-max-d``. Every seed draws ``round(--n-alpha * d)`` samples on the CPU (the first
``round(alpha d)`` are used at ``alpha``), so every device and every later run see the same data.

The store (``--out``, a ``.npz``; :mod:`stumplib.sweep.store`) records every parameter (model,
run, seed scheme, ``gtol``, code version of ``stumplib.core`` and ``stumplib.phase``, device kind),
each driver run's command, commit and machine, and each task's result, status, attempts, errors,
time and worker; it is rewritten atomically after each task. Rerunning a command resumes it: done
tasks are skipped, failed ones retried, more ``--d`` or ``--seeds`` add tasks; a different
parameter is refused (exit status 2) naming it, as is a second driver on the same ``--out``.
:func:`stumplib.sweep.readers.minimiser_runs_from_store` reads it back (``{d: {key: (seeds,
alphas)}}``). The committed ``PHASE_MINIMISERS_4000.npz`` (old layout, read by chapter 6) was made
by the earlier form of this script; ``scripts/import_legacy_run.py`` converts it.

Usage:

    python3 scripts/phase_minimisers.py --d 250 500 1000 2000 4000 --seeds 128 128 128 96 96 \\
        --alphas 1.0164 1.12 1.25 --gd-max-d 0 --workers 2 --out /tmp/runs.npz
    python3 scripts/phase_minimisers.py ... --scheduler tcp://HOST:8786     # an existing cluster
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from stumplib.sweep.cluster import pin_threads  # noqa: E402

if __name__ == "__main__":  # not when a test imports the script
    pin_threads()  # before numpy and torch start their thread pools: --workers 0 runs like a worker
import numpy as np  # noqa: E402

from stumplib.sweep import cli  # noqa: E402
from stumplib.sweep.driver import Task  # noqa: E402
from stumplib.sweep.readers import seed_task  # noqa: E402
from stumplib.sweep.store import Store  # noqa: E402
from stumplib.sweep.provenance import describe_run  # noqa: E402

KIND = "phase_minimisers"
#: how each seed's data are drawn (stumplib.phase.minimise.make_problem)
SEED_SCHEME = ("make_problem: teacher then round(n_alpha d) token pairs from one CPU torch "
               "generator seeded seed * 1000 + s, moved to the device")
#: the per-run quantities a task returns, shape (1 seed, alphas)
KEYS = ("test_error", "m", "theta_emp", "q_emp", "train_loss", "rel_grad", "n_iter", "n_newton",
        "converged", "gd_test_error", "gd_rel_grad")


def minimiser_task(d: int, s: int, p: dict[str, Any]) -> dict[str, np.ndarray]:
    """The minimisers of seed ``s`` at dimension ``d`` at every alpha (one sweep task)."""
    from stumplib.phase import MinimiserOptions, check_model, minimiser_runs

    gd = p["gd_steps"] if s < p["gd_seeds"] and d <= p["gd_max_d"] else 0
    r = minimiser_runs(p["alphas"], d, [s], init=p["init"], seed=p["seed"],
                       device=p["device_kind"],
                       model=check_model(omega=p["omega"], sigma=p["sigma"], lam=p["lam"],
                                         A=np.asarray(p["A"])),
                       options=MinimiserOptions(gtol=p["gtol"], gd_steps=gd, lr=p["lr"],
                                                n_nodes=p["n_nodes"], max_iter=p["max_iter"],
                                                n_samples=int(round(p["n_alpha"] * d))))
    nan = np.full((1, len(p["alphas"])), np.nan)
    out = {k: np.asarray(r[k]) if k in r else nan for k in KEYS}
    out.update(ran=np.ones((1, len(p["alphas"])), bool), alphas=np.asarray(p["alphas"], float),
               seeds=np.asarray([s]))
    return out


def parse(argv: list[str] | None) -> tuple[argparse.Namespace, dict[str, Any], list[Task], int]:
    """The arguments, checked before any work: namespace, recorded parameters, tasks, GPUs."""
    from stumplib.core.device import resolve_device
    from stumplib.core.validation import check_int, check_real
    from stumplib.core.version import code_version

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--d", type=int, nargs="+", required=True, help="dimensions (each >= 4)")
    ap.add_argument("--seeds", type=int, nargs="+", required=True,
                    help="seeds 0..S-1 per dimension: one value, or one per --d")
    ap.add_argument("--alphas", type=float, nargs="+", default=[1.0164, 1.12, 1.25])
    ap.add_argument("--gd-seeds", type=int, default=8, help="plain GD on seeds below this")
    ap.add_argument("--gd-steps", type=int, default=5000)
    ap.add_argument("--gd-max-d", type=int, default=1000, help="plain GD only up to this d")
    ap.add_argument("--omega", type=float, default=0.3)
    ap.add_argument("--sigma", type=float, default=0.5)
    ap.add_argument("--lam", type=float, default=0.01)
    ap.add_argument("--A", type=float, nargs=4, default=[0.6, 0.4, 0.4, 0.6])
    ap.add_argument("--seed", type=int, default=0, help="the chapter's seed")
    ap.add_argument("--gtol", type=float, default=1e-8)
    ap.add_argument("--n-alpha", type=float, default=1.25,
                    help="samples drawn per seed: round(n_alpha d) (>= every alpha)")
    ap.add_argument("--max-iter", type=int, default=20000)
    ap.add_argument("--n-nodes", type=int, default=16, help="Gauss-Hermite nodes of the test error")
    ap.add_argument("--device", default="cpu", help="cpu, cuda or cuda:K")
    ap.add_argument("--out", default=str(ROOT / "scripts" / "PHASE_MINIMISERS_SWEEP.npz"))
    cli.add_arguments(ap)
    a = ap.parse_args(argv)
    cli.check_arguments(ap, a)
    try:
        ds = [check_int(f"d[{i}]", d, minimum=4, maximum=1_000_000) for i, d in enumerate(a.d)]
        if len(set(ds)) != len(ds):
            raise ValueError(f"d: each dimension once; got {ds}")
        if len(a.seeds) not in (1, len(ds)):
            raise ValueError(f"seeds: one value or one per --d ({len(ds)}); got {len(a.seeds)}")
        seeds = [check_int(f"seeds[{i}]", s, minimum=1, maximum=100_000)
                 for i, s in enumerate(a.seeds * len(ds) if len(a.seeds) == 1 else a.seeds)]
        n_alpha = check_real("n_alpha", a.n_alpha, low=0.0, low_open=True, high=100.0)
        alphas = [check_real(f"alphas[{i}]", x, low=0.0, low_open=True, high=n_alpha)
                  for i, x in enumerate(a.alphas)]
        if min(round(x * min(ds)) for x in alphas) < 1:
            raise ValueError(f"alphas: round(alpha d) must be >= 1 at d = {min(ds)}")
        device = resolve_device(a.device)
        p = dict(omega=check_real("omega", a.omega, low=0.0, high=1.0),
                 sigma=check_real("sigma", a.sigma, low=0.0, low_open=True, high=100.0),
                 lam=check_real("lam", a.lam, low=0.0, high=1e3),
                 A=np.asarray(a.A, float).reshape(2, 2), alphas=alphas, init="semantic",
                 gtol=check_real("gtol", a.gtol, low=0.0, low_open=True, high=1.0), n_alpha=n_alpha,
                 gd_steps=check_int("gd_steps", a.gd_steps, minimum=0),
                 gd_seeds=check_int("gd_seeds", a.gd_seeds, minimum=0),
                 gd_max_d=check_int("gd_max_d", a.gd_max_d, minimum=0), lr=0.15,
                 max_iter=check_int("max_iter", a.max_iter, minimum=1),
                 n_nodes=check_int("n_nodes", a.n_nodes, minimum=4, maximum=40),
                 seed=check_int("seed", a.seed, minimum=0), seed_scheme=SEED_SCHEME,
                 code_version=code_version("core", "phase", "book/studies"), device_kind=device.type)
        from stumplib.phase.setting import check_A

        check_A(p["A"])
    except ValueError as e:
        ap.error(str(e))
    gpu = device.type == "cuda"
    tasks = [Task(seed_task(d, s), (d, s, p), gpu=gpu)
             for d, n in sorted(zip(ds, seeds), reverse=True) for s in range(n)]  # largest d first
    gpus = 0
    if gpu and a.scheduler is None:
        import torch

        gpus = torch.cuda.device_count()
    return a, p, tasks, gpus


def main(argv: list[str] | None = None) -> int:
    """Run (or resume) the sweep; the exit status of :func:`stumplib.sweep.cli.run`."""
    a, p, tasks, gpus = parse(argv)
    if gpus and a.workers is None:
        a.workers = gpus
    store = Store(a.out, kind=KIND, params=p, run=describe_run("scripts/phase_minimisers.py", argv))
    return cli.run(store, tasks, minimiser_task, a, gpus=gpus)


if __name__ == "__main__":
    raise SystemExit(main())
