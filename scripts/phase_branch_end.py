"""Chapter 6's fitted end of the semantic branch, one task per sweep (``stumplib.sweep``).

Each task is :func:`stumplib.book.studies.curves.branch_end_sweep` for one replicate ``r`` (the
scrambling family ``seed + 1000 (r + 1)``): the state evolution down ``--alphas`` from the start
``--init`` with ``--scramblings`` scramblings of ``2^(P-1)`` and ``2^P`` points (``--log2 P``).
Chapter 6 fits the end on each sweep and combines them
(:func:`stumplib.book.studies.curves.branch_end_fit` with ``recorded=``): a recorded sweep and the
chapter's own computation with the same arguments give the same arrays, so the chapter reads this
store (:func:`stumplib.book.runs.read_branch_end`) wherever every argument matches its own, and
solves the sweeps itself otherwise (another seed, omega or profile).

The store (``--out``, a ``.npz``; :mod:`stumplib.sweep.store`) records every parameter (alphas,
start, rules, model, seed, code version of ``stumplib.core``, ``stumplib.phase`` and the studies);
rerunning resumes, a different parameter is refused naming it, as is a second driver on the same
``--out``. The solver is numpy (CPU); each worker runs it on one thread.

Usage (the ``quick`` profile at seed 0; the start is the lowest converged point of the chapter's
accurate semantic curve, as the chapter prints it in its appendix):

    python3 scripts/phase_branch_end.py --alphas 0.78 0.77 0.76 0.75 0.74 0.73 0.72 \\
        --log2 15 --replicates 2 --seed 0 \\
        --init 0.06902032855290167 0.0 21.32393516096992 0.0966049930851302 --workers 2
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
    pin_threads()  # before numpy starts its thread pool: --workers 0 runs like a worker
import numpy as np  # noqa: E402

from stumplib.sweep import cli  # noqa: E402
from stumplib.sweep.driver import Task  # noqa: E402
from stumplib.sweep.provenance import describe_run  # noqa: E402
from stumplib.sweep.store import Store  # noqa: E402

KIND = "phase_branch_end"


def sweep_task(r: int, p: dict[str, Any]) -> dict[str, np.ndarray]:
    """One replicate's sweep (``outcome`` as a fixed-width string array)."""
    from stumplib.book.studies.curves import branch_end_sweep

    init = dict(zip(("q", "m", "V", "theta"), map(float, p["init"])))
    out = branch_end_sweep(p["alphas"], r, omega=p["omega"], log2_points=p["log2_points"],
                           n_scramblings=p["n_scramblings"], seed=p["seed"], sigma=p["sigma"],
                           lam=p["lam"], A=np.asarray(p["A"]), init=init,
                           max_updates=p["max_updates"])
    out["outcome"] = np.asarray(out["outcome"], dtype="U16")
    return out


def parse(argv: list[str] | None) -> tuple[argparse.Namespace, dict[str, Any], list[Task]]:
    """The arguments, checked before any work: namespace, recorded parameters, tasks."""
    from stumplib.core.validation import check_int, check_real
    from stumplib.core.version import code_version

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--alphas", type=float, nargs="+", required=True,
                    help="sample ratios just above the end, each in [0.05, 5]")
    ap.add_argument("--init", type=float, nargs=4, required=True, metavar=("Q", "M", "V", "THETA"),
                    help="the start of each sweep's first point")
    ap.add_argument("--log2", type=int, default=15, help="the finer rule, 2^P points (7 to 18)")
    ap.add_argument("--scramblings", type=int, default=12, help="scramblings per rule")
    ap.add_argument("--replicates", type=int, default=2, help="independent sweeps")
    ap.add_argument("--max-updates", type=int, default=150)
    ap.add_argument("--omega", type=float, default=0.3)
    ap.add_argument("--sigma", type=float, default=0.5)
    ap.add_argument("--lam", type=float, default=0.01)
    ap.add_argument("--A", type=float, nargs=4, default=[0.6, 0.4, 0.4, 0.6])
    ap.add_argument("--seed", type=int, default=0, help="the chapter's seed, in [0, 1000)")
    ap.add_argument("--out", default=str(ROOT / "scripts" / "PHASE_BRANCH_END.npz"))
    cli.add_arguments(ap)
    a = ap.parse_args(argv)
    cli.check_arguments(ap, a)
    try:
        alphas = sorted((check_real(f"alphas[{i}]", x, low=0.05, high=5.0)
                         for i, x in enumerate(a.alphas)), reverse=True)
        if len(set(alphas)) != len(alphas) or len(alphas) < 2:
            raise ValueError(f"alphas: at least two, each once; got {a.alphas}")
        init = [check_real(f"init[{i}]", x, low=-1e6, high=1e6) for i, x in enumerate(a.init)]
        if init[2] <= 0:
            raise ValueError(f"init: V (the third value) must be > 0; got {init[2]}")
        p = dict(alphas=alphas, init=init,
                 log2_points=check_int("log2", a.log2, minimum=7, maximum=18),
                 n_scramblings=check_int("scramblings", a.scramblings, minimum=2, maximum=64),
                 replicates=check_int("replicates", a.replicates, minimum=1, maximum=64),
                 max_updates=check_int("max_updates", a.max_updates, minimum=1),
                 omega=check_real("omega", a.omega, low=0.0, high=0.95),
                 sigma=check_real("sigma", a.sigma, low=0.0, low_open=True, high=100.0),
                 lam=check_real("lam", a.lam, low=0.0, high=1e3),
                 A=np.asarray(a.A, float).reshape(2, 2),
                 seed=check_int("seed", a.seed, minimum=0, maximum=999),
                 seed_scheme="sweep r: scrambling family seed + 1000 (r + 1)",
                 code_version=code_version("core", "phase", "book/studies"), device_kind="cpu")
        from stumplib.phase.setting import check_A

        check_A(p["A"])
    except ValueError as e:
        ap.error(str(e))
    return a, p, [Task(f"sweep{r}", (r, p)) for r in range(p["replicates"])]


def main(argv: list[str] | None = None) -> int:
    """Run (or resume) the sweep; the exit status of :func:`stumplib.sweep.cli.run`."""
    a, p, tasks = parse(argv)
    store = Store(a.out, kind=KIND, params=p, run=describe_run("scripts/phase_branch_end.py", argv))
    return cli.run(store, tasks, sweep_task, a)


if __name__ == "__main__":
    raise SystemExit(main())
