"""Chapter 6's phase diagram, one task per omega (``stumplib.sweep``).

At each positional share omega (``--omegas``) the crossings ``alpha_c`` (training losses of the two
branches) and ``alpha_l`` (test errors) are located by bracketing on ``--grid`` and refinement
(:func:`stumplib.book.studies.diagram.phase_diagram` at that omega alone: every omega is solved on its own,
so a one-omega call gives the same numbers as the same omega in a joint call). The state-evolution
solver is numpy (CPU); each worker runs it on one thread.

The store (``--out``, a ``.npz``; :mod:`stumplib.sweep.store`) records every parameter (grid,
accuracy targets and rules per omega, refinement, model, solver seed, code version of
``stumplib.core`` and ``stumplib.phase``); rerunning resumes (more omegas add tasks), a different
parameter is refused naming it, as is a second driver on the same ``--out``.
:func:`stumplib.sweep.readers.diagram_from_store` reads it back as ``phase_diagram`` returns it.

Usage (the ``full`` profile's diagram; the chapter's own omega at its finer target):

    python3 scripts/phase_diagram.py --omegas 0 0.05 0.1 0.15 0.2 0.25 0.3 0.35 0.4 0.45 \\
        --grid 2.6 2.2 1.8 1.5 1.25 1.05 0.9 0.8 0.7 0.6 --rtol 2e-3 --rtol-at 0.3 1e-3 \\
        --max-log2 16 --max-refine 5 --workers 2 --out /tmp/diagram.npz
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
from stumplib.sweep.readers import omega_task  # noqa: E402
from stumplib.sweep.store import Store  # noqa: E402

KIND = "phase_diagram"


def diagram_task(omega: float, p: dict[str, Any]) -> dict[str, np.ndarray]:
    """The phase diagram at one omega."""
    from stumplib.book.studies.diagram import phase_diagram

    key = repr(float(omega))
    return phase_diagram([omega], p["grid"], rtol={omega: p["rtol_at"].get(key, p["rtol"])},
                         max_log2_points={omega: p["log2_at"].get(key, p["max_log2"])},
                         xtol=p["xtol"], max_refine=p["max_refine"], sigma=p["sigma"], lam=p["lam"],
                         A=np.asarray(p["A"]), seed=p["seed"], cache=False,
                         min_log2_points=p["min_log2"], max_updates=p["max_updates"])


def parse(argv: list[str] | None) -> tuple[argparse.Namespace, dict[str, Any], list[Task]]:
    """The arguments, checked before any work: namespace, recorded parameters, tasks."""
    from stumplib.core.validation import check_int, check_real
    from stumplib.core.version import code_version

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--omegas", type=float, nargs="+", required=True, help="each in [0, 0.95]")
    ap.add_argument("--grid", type=float, nargs="+", default=[2.6, 2.2, 1.8, 1.5, 1.25, 1.05, 0.9, 0.8])
    ap.add_argument("--rtol", type=float, default=5e-3, help="the solver's accuracy target")
    ap.add_argument("--rtol-at", type=float, nargs=2, action="append", default=[],
                    metavar=("OMEGA", "RTOL"), help="another target at one omega (repeatable)")
    ap.add_argument("--max-log2", type=int, default=14, help="the solver's largest rule, 2^P points")
    ap.add_argument("--log2-at", type=float, nargs=2, action="append", default=[],
                    metavar=("OMEGA", "P"), help="another largest rule at one omega (repeatable)")
    ap.add_argument("--min-log2", type=int, default=10, help="the solver's first rule")
    ap.add_argument("--max-updates", type=int, default=150)
    ap.add_argument("--xtol", type=float, default=0.01)
    ap.add_argument("--max-refine", type=int, default=4)
    ap.add_argument("--sigma", type=float, default=0.5)
    ap.add_argument("--lam", type=float, default=0.01)
    ap.add_argument("--A", type=float, nargs=4, default=[0.6, 0.4, 0.4, 0.6])
    ap.add_argument("--seed", type=int, default=0, help="the solver's seed")
    ap.add_argument("--out", default=str(ROOT / "scripts" / "PHASE_DIAGRAM_SWEEP.npz"))
    cli.add_arguments(ap)
    a = ap.parse_args(argv)
    cli.check_arguments(ap, a)
    try:
        om = [check_real(f"omegas[{i}]", w, low=0.0, high=0.95) for i, w in enumerate(a.omegas)]
        if len(set(om)) != len(om):
            raise ValueError(f"omegas: each omega once; got {om}")
        grid = [check_real(f"grid[{i}]", x, low=0.05, high=20.0) for i, x in enumerate(a.grid)]
        if len(grid) < 2:
            raise ValueError("grid: at least two alphas")
        rtol_at = {repr(check_real("rtol-at omega", w, low=0.0, high=0.95)):
                   check_real("rtol-at rtol", r, low=0.0, low_open=True, high=0.5)
                   for w, r in a.rtol_at}
        log2_at = {repr(check_real("log2-at omega", w, low=0.0, high=0.95)):
                   check_int("log2-at P", int(q) if float(q).is_integer() else q, minimum=6, maximum=22)
                   for w, q in a.log2_at}
        p = dict(grid=grid, rtol=check_real("rtol", a.rtol, low=0.0, low_open=True, high=0.5),
                 rtol_at=rtol_at, max_log2=check_int("max_log2", a.max_log2, minimum=6, maximum=22),
                 log2_at=log2_at, min_log2=check_int("min_log2", a.min_log2, minimum=4, maximum=22),
                 max_updates=check_int("max_updates", a.max_updates, minimum=1),
                 xtol=check_real("xtol", a.xtol, low=0.0, low_open=True, high=1.0),
                 max_refine=check_int("max_refine", a.max_refine, minimum=0, maximum=20),
                 sigma=check_real("sigma", a.sigma, low=0.0, low_open=True, high=100.0),
                 lam=check_real("lam", a.lam, low=0.0, high=1e3),
                 A=np.asarray(a.A, float).reshape(2, 2),
                 seed=check_int("seed", a.seed, minimum=0),
                 seed_scheme="state evolution: scrambled Sobol rules from the solver's seed",
                 code_version=code_version("core", "phase", "book/studies"), device_kind="cpu")
        from stumplib.phase.setting import check_A

        check_A(p["A"])
    except ValueError as e:
        ap.error(str(e))
    return a, p, [Task(omega_task(w), (w, p)) for w in om]


def main(argv: list[str] | None = None) -> int:
    """Run (or resume) the sweep; the exit status of :func:`stumplib.sweep.cli.run`."""
    a, p, tasks = parse(argv)
    store = Store(a.out, kind=KIND, params=p, run=describe_run("scripts/phase_diagram.py", argv))
    return cli.run(store, tasks, diagram_task, a)


if __name__ == "__main__":
    raise SystemExit(main())
