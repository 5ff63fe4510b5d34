"""Convert a minimiser run of the old layout (``scripts/phase_minimisers.py`` before the sweep) into
a sweep store (:mod:`stumplib.sweep.store`) that the new script can read, check and resume against.

Every parameter the new script records must be in the store. The old file records ``omega``,
``sigma``, ``lam``, ``A``, ``seed``, ``gtol``, ``n_alpha``, ``gd_steps``, ``lr``, ``init``,
``code_version`` (the old script's hash of the objective's files) and ``alphas``; the others
(``gd_seeds``, ``gd_max_d``, ``max_iter``, ``n_nodes``, ``seed_scheme``, ``device_kind``) are not
in it. The converter refuses, naming them, unless each is given with ``--set KEY=VALUE`` (VALUE
read as JSON, else as text); the store's provenance then lists it as *supplied at conversion*. A
``--set`` of a parameter the file records is refused (a record is never overridden).

Each (d, seed) that ran at least one alpha becomes one done task (``d<d>_seed<s>``) holding its
(1, alphas) arrays, its ``ran`` mask and the index of the old process that made each run
(``source``); each old process (the file's ``sources``) becomes one run of the manifest, and the
provenance says ``imported from <file>`` with the file's hash, its last command and commit, and the
converter's command and commit. The old file records compute time per ``d`` only: each task gets an
even share (said in the provenance).

Usage:

    python3 scripts/import_legacy_run.py scripts/PHASE_MINIMISERS_4000.npz --out /tmp/converted.npz \\
        --set gd_seeds=8 --set gd_max_d=1000 --set max_iter=20000 --set n_nodes=16 \\
        --set device_kind=cpu --set seed_scheme="..."
"""
from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
import numpy as np  # noqa: E402

from stumplib.sweep.provenance import describe_run, now  # noqa: E402
from stumplib.sweep.readers import seed_task  # noqa: E402
from stumplib.sweep.store import Store  # noqa: E402

KIND = "phase_minimisers"
#: every parameter scripts/phase_minimisers.py records (tests/sweep checks the two lists agree)
PARAMS = ("omega", "sigma", "lam", "A", "alphas", "init", "gtol", "n_alpha", "gd_steps", "gd_seeds",
          "gd_max_d", "lr", "max_iter", "n_nodes", "seed", "seed_scheme", "code_version",
          "device_kind")
FLOAT_KEYS = ("test_error", "m", "theta_emp", "q_emp", "train_loss", "rel_grad", "n_iter",
              "n_newton", "gd_test_error", "gd_rel_grad")


def recorded_params(flat: dict[str, np.ndarray]) -> dict[str, Any]:
    """The parameters the old file records, as the new script records them."""
    out: dict[str, Any] = {}
    for k in ("omega", "sigma", "lam", "gtol", "n_alpha", "lr"):
        if k in flat:
            out[k] = float(flat[k])
    for k in ("seed", "gd_steps"):
        if k in flat:
            out[k] = int(flat[k])
    for k in ("init", "code_version"):
        if k in flat:
            out[k] = str(flat[k])
    if "A" in flat:
        out["A"] = np.asarray(flat["A"], float).reshape(2, 2)
    if "alphas" in flat:
        out["alphas"] = [float(a) for a in np.atleast_1d(flat["alphas"])]
    return out


def parse_set(items: list[str]) -> dict[str, Any]:
    """``["k=v", ...]`` -> ``{k: v}`` (v as JSON where it parses, else the text)."""
    out: dict[str, Any] = {}
    for it in items:
        k, eq, v = it.partition("=")
        if not eq or not k:
            raise SystemExit(f"--set {it!r}: expected KEY=VALUE")
        if k not in PARAMS:
            raise SystemExit(f"--set {k}: not a parameter of the store ({', '.join(PARAMS)})")
        try:
            out[k] = json.loads(v)
        except ValueError:
            out[k] = v
    return out


def legacy_runs(flat: dict[str, np.ndarray]) -> list[dict[str, Any]]:
    """One manifest run per old process (its command, commit, machine and note)."""
    if "sources" in flat:
        lines = [str(s) for s in np.atleast_1d(flat["sources"])]
    else:
        lines = [f"{flat['command']} | commit {flat['commit']} | {flat['machine']}"]
    runs = []
    for line in lines:
        parts = [p.strip() for p in line.split(" | ")]
        run: dict[str, Any] = {"command": parts[0], "imported": True, "source_line": line}
        for p in parts[1:]:
            if p.startswith("commit "):
                run["commit"] = p[len("commit "):]
            elif p.startswith("code "):
                run["code_version"] = p[len("code "):]
            elif "machine" not in run and ":" in p:
                run["machine"] = p
            else:
                run.setdefault("notes", []).append(p)
        runs.append(run)
    return runs


def convert(src: Path, out: Path, supplied: dict[str, Any], argv: list[str] | None = None) -> dict:
    """Write the store ``out`` from the old file ``src``; returns the store's provenance."""
    if out.exists():
        raise SystemExit(f"--out {out}: exists; the converter writes a new store only")
    with np.load(src, allow_pickle=False) as f:
        flat = {k: f[k] for k in f.files}
    if "manifest" in flat:
        raise SystemExit(f"{src}: already a sweep store")
    rec = recorded_params(flat)
    clash = sorted(set(rec) & set(supplied))
    if clash:
        raise SystemExit(f"--set {clash[0]}: {src.name} records {clash[0]} = {rec[clash[0]]!r}; a "
                         "recorded parameter cannot be supplied")
    missing = [k for k in PARAMS if k not in rec and k not in supplied]
    if missing:
        raise SystemExit(f"{src.name} does not record {', '.join(missing)}: give each with --set "
                         "KEY=VALUE (it is then marked 'supplied at conversion')")
    params = {k: rec.get(k, supplied.get(k)) for k in PARAMS}
    alphas = np.asarray(params["alphas"], float)
    runs = legacy_runs(flat)
    store = Store(out, kind=KIND, params=params,
                  run=describe_run("scripts/import_legacy_run.py", argv))
    store.open()
    try:
        conv = store.manifest["runs"].pop()
        store.manifest["runs"] = runs + [conv]
        store.run_index = len(runs)
        n_tasks = 0
        seconds_by_d = {}
        for d in (int(x) for x in np.atleast_1d(flat["ds"])):
            r = {k[len(f"d{d}_"):]: flat[k] for k in flat if k.startswith(f"d{d}_")}
            here = np.asarray(r["alphas"], float)
            if here.shape != alphas.shape or not np.array_equal(here, alphas):
                raise SystemExit(f"{src.name}: d = {d} has alphas {r['alphas']}, the file {alphas}")
            ran = np.asarray(r["ran"], bool)
            src_idx = np.asarray(r.get("source", np.zeros(ran.shape, int)), int)
            seeds = [int(s) for s in r["seeds"]]
            keep = [i for i in range(len(seeds)) if ran[i].any()]
            seconds_by_d[str(d)] = float(r.get("seconds", 0.0))
            share = seconds_by_d[str(d)] / max(len(keep), 1)
            for i in keep:
                tid = seed_task(d, seeds[i])
                res = {k: np.asarray(r[k][i:i + 1], float) for k in FLOAT_KEYS if k in r}
                res.update(converged=np.asarray(r["converged"][i:i + 1], bool), ran=ran[i:i + 1],
                           alphas=alphas, seeds=np.asarray([seeds[i]]),
                           source=np.where(ran[i:i + 1], src_idx[i:i + 1], -1))
                store.results[tid] = res
                used = sorted({int(x) for x in src_idx[i][ran[i]]})
                store.manifest["tasks"][tid] = {
                    "status": "done", "attempts": 1, "errors": [], "seconds": round(share, 3),
                    "worker": "imported", "run": used[0], "runs": used, "finished": None}
                n_tasks += 1
        digest = hashlib.sha256(src.read_bytes()).hexdigest()[:16]
        store.manifest["provenance"] = {
            "imported_from": f"{src.name} (sha256 {digest}), last command {flat.get('command', '?')}, "
                             f"commit {flat.get('commit', '?')}",
            "converted": now(), "converter": conv.get("command"),
            "converter_commit": conv.get("commit"), "recorded_by_file": sorted(rec),
            "supplied_at_conversion": dict(supplied),
            "notes": ["code_version is the old script's hash of the objective's source files "
                      f"({', '.join(str(x) for x in np.atleast_1d(flat.get('code_files', [])))}), "
                      "not stumplib.core.version.code_version('core', 'phase')",
                      "task seconds: each d's recorded compute time shared evenly among its seeds "
                      "(the old file records time per d only)",
                      "runs[i] is the old file's sources[i]; a task's 'runs' lists the old processes "
                      "that made its runs, its 'source' array which made each"],
            "seconds_by_d": seconds_by_d, "tasks": n_tasks}
        store.save()
    finally:
        store.close({"imported": True})
    return store.manifest["provenance"]


def main(argv: list[str] | None = None) -> int:
    """Convert; prints one line."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("legacy", help="the old file (e.g. scripts/PHASE_MINIMISERS_4000.npz)")
    ap.add_argument("--out", required=True, help="the new store (.npz; must not exist)")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="a parameter the old file does not record (repeatable)")
    a = ap.parse_args(argv)
    src, out = Path(a.legacy), Path(a.out)
    if not src.is_file():
        ap.error(f"legacy: no such file {src}")
    if out.suffix != ".npz":
        ap.error(f"--out: a .npz store; got {out}")
    prov = convert(src, out, parse_set(a.set), argv)
    print(f"{out}: {prov['tasks']} tasks imported from {src.name}; supplied at conversion: "
          f"{', '.join(f'{k}={v!r}' for k, v in prov['supplied_at_conversion'].items()) or 'none'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
