"""Chapter 6's flat window and lowest minima: the landscape along theta at finite d, the lowest
minimum of each seed, and the theory along theta, as a sweep.

At ``alpha = 1.0164`` (omega = 0.3), for each dimension ``d`` and seed (one task each,
``stumplib.sweep``), :func:`stumplib.book.studies.lowest_minima.search` looks for the lowest minimum of
the regularised empirical risk with a fixed, recorded sequence of starts: the informed start
``Q = Q*``; the minimisers with the semantic overlap ``theta = sigma^2 Q*.Q / d`` held along a
window (the landscape along theta: L-BFGS on the constraint plane by continuation up and down, the
lower kept), each released; ``Q*`` rotated to the window's ends and middle; perturbations of the
lowest minimum so far. Every start's minimum is recorded (loss, overlaps, exact test error,
convergence, which distinct minimum), with the saturation of the search. The theory's constrained
training loss along the same window (:func:`stumplib.book.studies.held_theory.held_theory`, one curve per
scrambling of a Sobol rule) is one task per stage: ``theory`` (the window), ``root`` (a narrow
window, a finer rule), ``control_theory`` (a point outside the window, whose seeds are searched
too, ``control_seed<s>``).

The store (``--out``, a ``.npz``; :mod:`stumplib.sweep.store`) records every parameter (the model
with ``A``, ``gtol``, the windows, the search's starts, the rules, the seed scheme, the code version
of ``stumplib.core`` and ``stumplib.phase``, the device kind) and each driver run's command, commit
and machine; it is rewritten atomically after each task. Rerunning resumes (more seeds or stages
add tasks); a different parameter is refused, naming it, as is a second driver on the same
``--out``. :func:`stumplib.sweep.readers.landscape_from_store` reads it back (the landscape in the
layout of :func:`stumplib.book.runs.read_flat_window`, and every seed's search).

Usage (chapter 6's recorded run, ``scripts/PHASE_LOWEST_MINIMA.md``):

    python3 scripts/phase_flat_window.py --d 8000 4000 2000 1000 500 --seeds 8 16 16 24 24 \
        --stages theory landscape root control --workers 2 --out scripts/PHASE_LOWEST_MINIMA.npz
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
from stumplib.sweep.provenance import describe_run  # noqa: E402
from stumplib.sweep.readers import seed_task  # noqa: E402
from stumplib.sweep.store import Store  # noqa: E402

KIND = "phase_flat_window"
SEED_SCHEME = ("make_problem: teacher then round(alpha d) token pairs from one CPU torch generator "
               "seeded seed * 1000 + s, moved to the device; theory: Sobol scramblings from seed")
STAGES = ("theory", "landscape", "root", "control")
#: what a landscape task does (recorded with the parameters)
SEARCH = ("stumplib.book.studies.lowest_minima.search: the informed start Q = Q*; the line of held theta "
          "by continuation up and down from its minimiser, each point released; Q* rotated to the "
          "line's ends and middle (--rotations random directions each); perturbations of the "
          "lowest minimum so far (--perturb); random directions from numpy's generator seeded "
          "(seed, s, d, 38) on the CPU")


def _model(p: dict[str, Any]) -> dict[str, Any]:
    return dict(omega=p["omega"], sigma=p["sigma"], lam=p["lam"], A=np.asarray(p["A"]), seed=p["seed"])


def theory_task(stage: str, p: dict[str, Any]) -> dict[str, np.ndarray]:
    """The held theory of one stage (``theory``, ``root`` or ``control_theory``)."""
    from stumplib.book.studies.held_theory import held_theory

    alpha, thetas, log2, k = {
        "theory": (p["alpha"], p["thetas"], p["theory_log2"], p["theory_scramblings"]),
        "root": (p["alpha"], p["root_thetas"], p["root_log2"], p["root_scramblings"]),
        "control_theory": (p["control_alpha"], p["control_thetas"], p["theory_log2"],
                           p["theory_scramblings"])}[stage]
    return held_theory(alpha, np.asarray(thetas), log2_points=log2, n_scramblings=k, **_model(p))


def landscape_task(group: str, d: int, s: int, p: dict[str, Any]) -> dict[str, np.ndarray]:
    """The lowest-minimum search of seed ``s`` at dimension ``d`` (group ``"window"`` or
    ``"control"``): the line of held theta, its releases, rotations of ``Q*`` and perturbations
    of the best (:func:`stumplib.book.studies.lowest_minima.search`), every start recorded."""
    from stumplib.book.studies.lowest_minima import search

    alpha, thetas = ((p["alpha"], p["thetas"]) if group == "window"
                     else (p["control_alpha"], p["control_thetas"]))
    r = search(alpha, d, s, np.asarray(thetas), n_rotations=p["n_rotations"],
               perturb_scales=p["perturb_scales"], gtol=p["gtol"], same_tol=p["same_tol"],
               device=p["device_kind"], **_model(p))
    return {k: np.asarray(v)[None] for k, v in r.items()}  # a leading seed axis of length 1


def parse(argv: list[str] | None) -> tuple[argparse.Namespace, dict[str, Any], list[Task], int]:
    """The arguments, checked before any work: namespace, recorded parameters, tasks, GPUs."""
    from stumplib.core.device import resolve_device
    from stumplib.core.validation import check_int, check_real
    from stumplib.core.version import code_version

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--d", type=int, nargs="+", default=[500, 1000, 2000])
    ap.add_argument("--seeds", type=int, nargs="+", default=[24, 12, 8],
                    help="seeds 0..S-1 per dimension (one value, or one per --d)")
    ap.add_argument("--pick", nargs="+", default=None, metavar="D:S,S,...",
                    help="search only these seeds of these dimensions, in this order (replaces "
                    "--d and --seeds for the landscape stage; for example 4000:1,3 8000:2)")
    ap.add_argument("--alpha", type=float, default=1.0164)
    ap.add_argument("--theta-range", type=float, nargs=3, default=[0.082, 0.112, 7],
                    help="first, last held theta and their number")
    ap.add_argument("--theory-log2", type=int, default=13)
    ap.add_argument("--theory-scramblings", type=int, default=8)
    ap.add_argument("--omega", type=float, default=0.3)
    ap.add_argument("--sigma", type=float, default=0.5)
    ap.add_argument("--lam", type=float, default=0.01)
    ap.add_argument("--A", type=float, nargs=4, default=[0.6, 0.4, 0.4, 0.6])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--gtol", type=float, default=1e-8)
    ap.add_argument("--rotations", type=int, default=2,
                    help="random rotations of Q* at each of the line's ends and middle (>= 0)")
    ap.add_argument("--perturb", type=float, nargs="*", default=[0.05, 0.1, 0.2, 0.4],
                    help="relative sizes of the perturbations of the lowest minimum so far")
    ap.add_argument("--same-tol", type=float, default=1e-3,
                    help="two minimisers closer than this relative distance are one minimum")
    ap.add_argument("--stages", nargs="+", default=["theory", "landscape"], choices=STAGES,
                    help="root: the theory along a narrow window with a finer rule (the second "
                    "route to the fixed point); control: theory and landscape outside the window")
    ap.add_argument("--root-window", type=float, nargs=3, default=[0.0955, 0.0985, 4])
    ap.add_argument("--root-log2", type=int, default=14)
    ap.add_argument("--root-scramblings", type=int, default=4)
    ap.add_argument("--control", type=float, nargs=6, default=[2.0, 500, 8, 0.146, 0.170, 5],
                    help="control stage: alpha, d, seeds, first and last theta, their number "
                    "(a point outside the window: landscape and theory should agree there)")
    ap.add_argument("--device", default="cpu", help="cpu, cuda or cuda:K (the landscape tasks)")
    ap.add_argument("--out", default=str(ROOT / "scripts" / "PHASE_LOWEST_MINIMA.npz"))
    cli.add_arguments(ap)
    a = ap.parse_args(argv)
    cli.check_arguments(ap, a)
    try:
        sigma = check_real("sigma", a.sigma, low=0.0, low_open=True, high=100.0)

        def window(name: str, w: list[float]) -> list[float]:
            n = check_int(f"{name} number", int(w[2]) if float(w[2]).is_integer() else w[2],
                          minimum=2, maximum=1000)
            lo = check_real(f"{name} first", w[0], low=0.0, low_open=True, high=sigma ** 2)
            hi = check_real(f"{name} last", w[1], low=lo, low_open=True, high=sigma ** 2)
            return np.linspace(lo, hi, n).tolist()

        ds = [check_int(f"d[{i}]", d, minimum=4, maximum=1_000_000) for i, d in enumerate(a.d)]
        if len(set(ds)) != len(ds):
            raise ValueError(f"d: each dimension once; got {ds}")
        if len(a.seeds) not in (1, len(ds)):
            raise ValueError(f"seeds: one value or one per --d ({len(ds)}); got {len(a.seeds)}")
        seeds = [check_int(f"seeds[{i}]", s, minimum=1, maximum=100_000)
                 for i, s in enumerate(a.seeds * len(ds) if len(a.seeds) == 1 else a.seeds)]
        pick: list[tuple[int, int]] = []
        for item in a.pick or []:
            dd, _, ss = item.partition(":")
            if not (dd.isdigit() and ss and all(x.isdigit() for x in ss.split(","))):
                raise ValueError(f"pick: expected D:S,S,... (for example 4000:1,3); got {item!r}")
            pick += [(check_int("pick d", int(dd), minimum=4, maximum=1_000_000),
                      check_int("pick seed", int(x), minimum=0, maximum=100_000))
                     for x in ss.split(",")]
        if len(set(pick)) != len(pick):
            raise ValueError(f"pick: each (d, seed) once; got {a.pick}")
        c_seeds = check_int("control seeds", int(a.control[2]), minimum=1, maximum=100_000)
        device = resolve_device(a.device)
        p = dict(alpha=check_real("alpha", a.alpha, low=0.0, low_open=True, high=100.0),
                 omega=check_real("omega", a.omega, low=0.0, high=1.0), sigma=sigma,
                 lam=check_real("lam", a.lam, low=0.0, high=1e3),
                 A=np.asarray(a.A, float).reshape(2, 2), seed=check_int("seed", a.seed, minimum=0),
                 gtol=check_real("gtol", a.gtol, low=0.0, low_open=True, high=1.0),
                 thetas=window("theta-range", a.theta_range),
                 theory_log2=check_int("theory_log2", a.theory_log2, minimum=4, maximum=22),
                 theory_scramblings=check_int("theory_scramblings", a.theory_scramblings, minimum=2,
                                              maximum=64),
                 root_thetas=window("root-window", a.root_window),
                 root_log2=check_int("root_log2", a.root_log2, minimum=4, maximum=22),
                 root_scramblings=check_int("root_scramblings", a.root_scramblings, minimum=2,
                                            maximum=64),
                 control_alpha=check_real("control alpha", a.control[0], low=0.0, low_open=True,
                                          high=100.0),
                 control_d=check_int("control d", int(a.control[1]), minimum=4, maximum=1_000_000),
                 control_thetas=window("control window", list(a.control[3:])),
                 n_rotations=check_int("rotations", a.rotations, minimum=0, maximum=100),
                 perturb_scales=[check_real(f"perturb[{i}]", e, low=0.0, low_open=True, high=10.0)
                                 for i, e in enumerate(a.perturb)],
                 same_tol=check_real("same-tol", a.same_tol, low=0.0, low_open=True, high=0.1),
                 search=SEARCH,
                 seed_scheme=SEED_SCHEME, code_version=code_version("core", "phase", "book/studies"),
                 device_kind=device.type)
        from stumplib.phase.setting import check_A

        check_A(p["A"])
    except ValueError as e:
        ap.error(str(e))
    gpu = device.type == "cuda"
    tasks = [Task(st, (st, p)) for st, on in (("theory", "theory"), ("root", "root"),
                                             ("control_theory", "control")) if on in a.stages]
    if "control" in a.stages:
        tasks += [Task(seed_task("control", s), ("control", p["control_d"], s, p), gpu=gpu)
                  for s in range(c_seeds)]
    if "landscape" in a.stages:
        order = pick or [(d, s) for d, n in sorted(zip(ds, seeds), reverse=True)
                         for s in range(n)]
        tasks += [Task(seed_task(d, s), ("window", d, s, p), gpu=gpu) for d, s in order]
    gpus = 0
    if gpu and a.scheduler is None:
        import torch

        gpus = torch.cuda.device_count()
    return a, p, tasks, gpus


def flat_window_task(*args: Any) -> dict[str, np.ndarray]:
    """One task: a theory stage ``(stage, params)`` or a landscape ``(group, d, seed, params)``."""
    return theory_task(*args) if len(args) == 2 else landscape_task(*args)


def main(argv: list[str] | None = None) -> int:
    """Run (or resume) the sweep; the exit status of :func:`stumplib.sweep.cli.run`."""
    a, p, tasks, gpus = parse(argv)
    if gpus and a.workers is None:
        a.workers = gpus
    store = Store(a.out, kind=KIND, params=p, run=describe_run("scripts/phase_flat_window.py", argv))
    return cli.run(store, tasks, flat_window_task, a, gpus=gpus)


if __name__ == "__main__":
    raise SystemExit(main())
