"""Chapter 6's deciding run: converged minimisers of the attention student at omega = 0.3.

For each job ``d:alphas:seeds`` and each seed, the regularised empirical risk is minimised from
the semantic start (``Q = Q*``) with :func:`stumplib.phase.minimise.minimiser_runs` (L-BFGS,
Newton-CG finish, relative gradient ``--gtol``), and each run's exact test error is recorded; the
paper's plain GD (``--gd-steps`` steps of 0.15) runs from the same start on the first
``--gd-seeds`` seeds at ``d <= --gd-max-d``. Every seed draws ``round(--n-alpha * d)`` samples
(the first ``round(alpha d)`` are used at ``alpha``), so an alpha added later sees the same data
as the stored alphas of that seed.

The output (``--out``, an ``.npz``) holds, per ``d``, the union of the seeds and alphas run so far
(arrays ``d<d>_<key>`` of shape (seeds, alphas), NaN where a (seed, alpha) was not run,
``d<d>_ran`` says which were), the model and run parameters (``omega``, ``sigma``, ``lam``, ``A``,
``seed``, ``gtol``, ``n_alpha``, ``code_version``: a hash of the phase objective's source files)
and the provenance of every run (``sources``: command, commit, machine of each contributing
process; ``d<d>_source`` indexes it). It is rewritten (atomically) after every batch of seeds, so
a stopped run keeps what it finished; an existing ``--out`` is resumed, and ``--merge`` files
(earlier runs, e.g. without recorded parameters: the defaults of this script are assumed) are
merged in. A (seed, alpha) already present is never run or counted twice.

Usage (one CPU thread; ``--device cuda`` on a GPU):

    OMP_NUM_THREADS=1 python3 scripts/phase_minimisers.py --merge scripts/PHASE_MINIMISERS.npz \
        --job 4000:1.0164:0-23 --job 250,500,1000:1.12:0-63 --job 2000:1.12:0-31 \
        --out scripts/PHASE_MINIMISERS_4000.npz
    OMP_NUM_THREADS=1 python3 scripts/phase_minimisers.py --d 250 500 --seeds 128 \
        --out /tmp/runs.npz                         # the original form (all alphas at every d)

(the first command merged the first run's file, ``PHASE_MINIMISERS.npz`` of commit a91892d, since
removed: every run of it is in ``PHASE_MINIMISERS_4000.npz``).
"""
from __future__ import annotations

import argparse
import hashlib
import os
import platform
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from stumplib.phase.minimise import minimiser_runs  # noqa: E402

#: the source files that define the objective, its minimiser and the exact test error
OBJECTIVE_FILES = ("stumplib/phase/data.py", "stumplib/phase/attention.py", "stumplib/phase/objective.py",
                   "stumplib/phase/minimise.py")
#: parameters every merged run must share (model and run); defaults of the first stored run
PARAMS = dict(omega=0.3, sigma=0.5, lam=0.01, A=np.array([[0.6, 0.4], [0.4, 0.6]]), seed=0, gtol=1e-8,
              n_alpha=1.25, gd_steps=5000, lr=0.15, init="semantic")
FLOAT_KEYS = ("test_error", "m", "theta_emp", "q_emp", "train_loss", "rel_grad", "n_iter", "n_newton",
              "gd_test_error", "gd_rel_grad")


def code_version(root: Path = ROOT) -> tuple[str, list[str]]:
    """A hash (16 hex digits) of the phase objective's source files that exist, and their list."""
    h, files = hashlib.sha256(), []
    for f in OBJECTIVE_FILES:
        p = root / f
        if p.is_file():
            files.append(f)
            h.update(f.encode() + b"\0" + p.read_bytes() + b"\0")
    return h.hexdigest()[:16], files


def parse_seeds(text: str) -> list[int]:
    """``"N"`` (seeds 0..N-1) or ``"a-b"`` (a..b inclusive), comma-separated parts allowed."""
    out: list[int] = []
    for part in text.split(","):
        if "-" in part:
            a, b = (int(x) for x in part.split("-"))
            out += list(range(a, b + 1))
        else:
            out += list(range(int(part)))
    return sorted(set(out))


def parse_job(text: str) -> list[tuple[int, list[float], list[int]]]:
    """``"d1,d2:alpha1,alpha2:seeds"`` -> one (d, alphas, seeds) per d."""
    try:
        ds, al, se = text.split(":")
        return [(int(d), [float(a) for a in al.split(",")], parse_seeds(se)) for d in ds.split(",")]
    except ValueError as e:
        raise SystemExit(f"--job {text!r}: expected d[,d...]:alpha[,alpha...]:seeds ({e})")


class Store:
    """Runs per ``d``: seeds x alphas arrays, NaN where not run, with the run mask and source."""

    def __init__(self) -> None:
        self.d: dict[int, dict[str, Any]] = {}
        self.sources: list[str] = []
        self.seconds: dict[int, float] = {}

    def has(self, d: int, s: int, a: float) -> bool:
        e = self.d.get(d)
        if e is None or s not in e["seeds"] or round(a, 6) not in e["alphas"]:
            return False
        return bool(e["ran"][e["seeds"].index(s), e["alphas"].index(round(a, 6))])

    def _grow(self, d: int, seeds: list[int], alphas: list[float]) -> dict[str, Any]:
        e = self.d.setdefault(d, dict(seeds=[], alphas=[], arr={}, ran=np.zeros((0, 0), bool),
                                      source=np.zeros((0, 0), int), conv=np.zeros((0, 0), bool)))
        S = sorted(set(e["seeds"]) | set(seeds))
        A = sorted(set(e["alphas"]) | {round(a, 6) for a in alphas})
        if S == e["seeds"] and A == e["alphas"]:
            return e
        iS = [S.index(s) for s in e["seeds"]]
        iA = [A.index(a) for a in e["alphas"]]

        def move(x, fill):
            y = np.full((len(S), len(A)), fill, dtype=x.dtype)
            y[np.ix_(iS, iA)] = x
            return y

        e["arr"] = {k: move(v, np.nan) for k, v in e["arr"].items()}
        e["ran"], e["conv"], e["source"] = move(e["ran"], False), move(e["conv"], False), move(e["source"], -1)
        e["seeds"], e["alphas"] = S, A
        return e

    def add(self, d: int, r: dict[str, np.ndarray], source: int, ran: np.ndarray | None = None) -> int:
        """Merge one :func:`minimiser_runs` output (or a stored file's arrays) at ``d``; (seed, alpha)
        pairs already present are kept, not overwritten. Returns the number of runs added."""
        seeds, alphas = [int(s) for s in r["seeds"]], [float(a) for a in r["alphas"]]
        e = self._grow(d, seeds, alphas)
        ran = np.ones((len(seeds), len(alphas)), bool) if ran is None else ran
        added = 0
        for i, s in enumerate(seeds):
            for j, a in enumerate(alphas):
                I, J = e["seeds"].index(s), e["alphas"].index(round(a, 6))
                if not ran[i, j] or e["ran"][I, J]:
                    continue
                for k in FLOAT_KEYS:
                    if k in r:
                        if k not in e["arr"]:
                            e["arr"][k] = np.full(e["ran"].shape, np.nan)
                        e["arr"][k][I, J] = r[k][i, j]
                e["conv"][I, J], e["ran"][I, J], e["source"][I, J] = bool(r["converged"][i, j]), True, source
                added += 1
        return added

    def flat(self) -> dict[str, np.ndarray]:
        out: dict[str, np.ndarray] = {}
        for d in sorted(self.d):
            e = self.d[d]
            for k, v in e["arr"].items():
                out[f"d{d}_{k}"] = v
            out[f"d{d}_converged"], out[f"d{d}_ran"] = e["conv"], e["ran"]
            out[f"d{d}_source"] = e["source"]
            out[f"d{d}_alphas"], out[f"d{d}_seeds"] = np.asarray(e["alphas"]), np.asarray(e["seeds"])
            out[f"d{d}_d"] = np.asarray(d)
            out[f"d{d}_seconds"] = np.asarray(self.seconds.get(d, 0.0))
        out["ds"] = np.asarray(sorted(self.d))
        out["sources"] = np.asarray(self.sources)
        return out


def check_params(name: str, got: dict[str, Any], want: dict[str, Any]) -> None:
    """Refuse to merge runs whose model or run parameters differ."""
    for k, v in want.items():
        if k in got and k != "gd_steps":
            same = np.allclose(np.asarray(got[k], float), np.asarray(v, float)) if k != "init" \
                else str(got[k]) == str(v)
            if not same:
                raise SystemExit(f"{name}: {k} = {got[k]} differs from this run's {v}; not merged")


def load(store: Store, path: Path, params: dict[str, Any]) -> None:
    """Merge a stored file (this script's output, old or new format) into ``store``."""
    with np.load(path) as f:
        flat = {k: f[k] for k in f.files}
    got = {k: flat[k] for k in PARAMS if k in flat}
    if "init" in got:
        got["init"] = str(got["init"])
    check_params(str(path), got, params)
    if "sources" in flat:
        old_sources = [str(s) for s in flat["sources"]]
    else:  # the first format: one process, parameters not recorded (this script's defaults then)
        old_sources = [f"{flat['command']} | commit {flat['commit']} | {flat['machine']} | "
                       f"{float(flat['seconds']):.0f} s | parameters not recorded (script defaults)"]
    base = len(store.sources)
    store.sources += old_sources
    for d in (int(x) for x in np.atleast_1d(flat["ds"])):
        r = {k[len(f"d{d}_"):]: flat[k] for k in flat if k.startswith(f"d{d}_")}
        ran = r.get("ran")
        n_added = 0
        src = r.get("source")
        if src is None:
            n_added = store.add(d, r, base, ran)
        else:  # keep each run's own source
            for si in np.unique(src[src >= 0]):
                n_added += store.add(d, r, base + int(si), (src == si) & (ran if ran is not None else True))
        store.seconds[d] = store.seconds.get(d, 0.0) + float(r.get("seconds", 0.0))
        print(f"{path.name}: d={d}: {n_added} runs merged", flush=True)


def save(store: Store, out: Path, meta: dict[str, Any], params: dict[str, Any], t_all: float) -> None:
    flat = store.flat()
    flat.update({k: np.asarray(v) for k, v in meta.items()})
    flat.update({k: np.asarray(v) for k, v in params.items()})
    flat["seconds"] = np.asarray(time.time() - t_all)
    flat["alphas"] = np.asarray(sorted({a for e in store.d.values() for a in e["alphas"]}))
    tmp = out.with_name(out.stem + ".part.npz")
    np.savez(tmp, **flat)
    os.replace(tmp, out)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--job", action="append", default=[],
                    help="d[,d...]:alpha[,alpha...]:seeds (seeds: N for 0..N-1, or a-b); repeatable")
    ap.add_argument("--d", type=int, nargs="+", default=[], help="the original form: these d ...")
    ap.add_argument("--seeds", type=int, nargs="+", default=[128], help="... with these seeds (one or per d)")
    ap.add_argument("--alphas", type=float, nargs="+", default=[1.0164, 1.25], help="... at these alphas")
    ap.add_argument("--merge", action="append", default=[], help="earlier output files to merge in")
    ap.add_argument("--batch", type=int, default=0, help="seeds per call (memory; 0: by d)")
    ap.add_argument("--gd-seeds", type=int, default=8)
    ap.add_argument("--gd-steps", type=int, default=PARAMS["gd_steps"])
    ap.add_argument("--gd-max-d", type=int, default=1000, help="plain GD only up to this d")
    ap.add_argument("--omega", type=float, default=PARAMS["omega"])
    ap.add_argument("--sigma", type=float, default=PARAMS["sigma"])
    ap.add_argument("--lam", type=float, default=PARAMS["lam"])
    ap.add_argument("--A", type=float, nargs=4, default=list(PARAMS["A"].ravel()))
    ap.add_argument("--seed", type=int, default=PARAMS["seed"], help="the chapter's seed")
    ap.add_argument("--gtol", type=float, default=PARAMS["gtol"])
    ap.add_argument("--n-alpha", type=float, default=PARAMS["n_alpha"],
                    help="samples drawn per seed: round(n_alpha d) (>= every alpha)")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--out", default="scripts/PHASE_MINIMISERS_4000.npz")
    a = ap.parse_args(argv)
    jobs = [j for t in a.job for j in parse_job(t)]
    if a.d:
        seeds = a.seeds * len(a.d) if len(a.seeds) == 1 else a.seeds
        if len(seeds) != len(a.d):
            raise SystemExit("--seeds: one value or one per --d")
        jobs += [(d, list(a.alphas), list(range(ns))) for d, ns in zip(a.d, seeds)]
    if any(al > a.n_alpha + 1e-12 for _, als, _ in jobs for al in als):
        raise SystemExit(f"--n-alpha {a.n_alpha} must be >= every alpha of the jobs")
    torch.set_num_threads(1)
    params = dict(omega=a.omega, sigma=a.sigma, lam=a.lam, A=np.asarray(a.A, float).reshape(2, 2),
                  seed=a.seed, gtol=a.gtol, n_alpha=a.n_alpha, gd_steps=a.gd_steps, lr=0.15,
                  init="semantic")
    cv, files = code_version()
    commit = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True,
                            cwd=ROOT).stdout.strip()
    dirty = subprocess.run(["git", "status", "--porcelain", "--", *files, "scripts/phase_minimisers.py"],
                           capture_output=True, text=True, cwd=ROOT).stdout.strip()
    machine = (f"{platform.node()}: {platform.processor() or platform.machine()}, {a.device}, "
               f"torch {torch.__version__}, {torch.get_num_threads()} thread")
    command = " ".join(["python3", "scripts/phase_minimisers.py"] + (sys.argv[1:] if argv is None else argv))
    meta = dict(command=command, commit=commit + (" (objective files modified)" if dirty else ""),
                machine=machine, code_version=cv, code_files=np.asarray(files))
    out = Path(a.out)
    store, t_all = Store(), time.time()
    for p in ([out] if out.is_file() else []) + [Path(m) for m in a.merge]:
        load(store, p, params)
    store.sources.append(f"{command} | commit {meta['commit']} | {machine} | code {cv}")
    me = len(store.sources) - 1
    save(store, out, meta, params, t_all)
    for d, alphas, seeds in jobs:
        todo = [s for s in seeds if any(not store.has(d, s, al) for al in alphas)]
        batch = a.batch or (len(todo) or 1)
        t_d = time.time()
        for i in range(0, len(todo), batch):
            chunk = todo[i:i + batch]
            need = [al for al in alphas if any(not store.has(d, s, al) for s in chunk)]
            t0 = time.time()
            gd = a.gd_steps if d <= a.gd_max_d else 0
            n_gd = sum(1 for s in chunk if s < a.gd_seeds)
            r = minimiser_runs(need, d, chunk, omega=a.omega, sigma=a.sigma, lam=a.lam,
                               A=params["A"], gtol=a.gtol, seed=a.seed, gd_steps=gd if n_gd else 0,
                               gd_seeds=max(n_gd, 1), n_samples=int(round(a.n_alpha * d)),
                               device=a.device)
            if n_gd and n_gd < len(chunk):  # GD only on seeds < --gd-seeds
                for k in ("gd_test_error", "gd_rel_grad"):
                    r[k][[s >= a.gd_seeds for s in chunk]] = np.nan
            added = store.add(d, r, me)
            store.seconds[d] = store.seconds.get(d, 0.0) + time.time() - t0
            save(store, out, meta, params, t_all)
            print(f"d={d} alphas={need} seeds {chunk[0]}..{chunk[-1]}: {added} runs in "
                  f"{time.time() - t0:.0f} s; converged {r['converged'].mean():.3f}; "
                  f"mean test error {np.round(r['test_error'].mean(0), 6)}", flush=True)
        print(f"d={d}: job done in {time.time() - t_d:.0f} s", flush=True)
    print(f"all done in {time.time() - t_all:.0f} s", flush=True)


if __name__ == "__main__":
    main()
