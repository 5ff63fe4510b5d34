"""Derive each glued number's snapshot tolerance from its own conditioning, measured.

The glue snapshot test (``tests/test_glue_snapshot.py``) compares every chapter's glued numbers at
the ``smoke`` profile with the reviewed snapshot ``scripts/glue_smoke_baseline.json``. A number's
last digits depend on the machine: numpy, OpenBLAS, MKL and torch pick kernels by instruction set
(AVX-512, AVX2, SSE4.2), and a different kernel sums in another order. How far that moves a number
is a property of the number (its conditioning: a quadrature node that carries 13% of a sum moves
it by 1e-6), so its tolerance is measured, not chosen:

1. every chapter is executed at ``smoke`` under each setting of :data:`SETTINGS` on this machine
   (the kernels an AVX-512, an AVX2 and an x86-64-v2 machine would select, and two threads instead
   of one), each in its own process;
2. a number's **spread** is the largest relative difference between any two of those runs and the
   reviewed snapshot (made on another machine): ``|a - b| / max(|a|, |b|)``, counted only where
   ``|a - b|`` exceeds the absolute tolerance ``ATOL`` (numbers that are zero up to rounding);
3. its tolerance is ``max(FLOOR, MARGIN x spread)``: :data:`MARGIN` covers machines whose kernels
   differ more than these imitations (measured on the machine where CI failed: its value was
   1.3 times the farthest imitation's difference from the snapshot), :data:`FLOOR` keeps the
   default for numbers no setting moved;
4. **aliases** (one number glued under several names, e.g. ``bound_N_estimate`` and
   ``frozen_slope_N``: names of a chapter whose values are equal in every run and not integers)
   share the largest tolerance of their group;
5. statuses are never toleranced (the test compares them exactly); a status or the NaN-ness of a
   number that differs between settings is reported as unstable, and the script exits non-zero.

It writes ``tests/glue_tolerances.json`` (method, margin, floor, settings, commit, every number
whose tolerance exceeds the floor with its spread and aliases, and the **measured margins**: per
setting, the largest ``|difference from the snapshot| / allowed difference``, which must stay below
1 and is expected near ``1 / MARGIN``).

Usage (about 3 minutes per setting, two settings at a time on two cores)::

    python scripts/glue_tolerances.py --runs /tmp/glue_runs              # run all, then derive
    python scripts/glue_tolerances.py --runs /tmp/glue_runs --reuse      # derive from kept runs

Regenerate it whenever the snapshot is regenerated (new names get the floor until then).
"""
from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
from glue_snapshot import ATOL, TOLERANCE_FILE, differences, excluded, is_number  # noqa: E402

BASELINE = ROOT / "scripts" / "glue_smoke_baseline.json"
#: how many times the measured spread a number may move
MARGIN = 10.0
#: the tolerance of a number no setting moved (3e6 times the largest summation-order difference,
#: 3e-13, seen between two runs of one code)
FLOOR = 1e-6
_ONE = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1",
        "STUMPLIB_THREADS": "1"}
#: the settings measured: environment variables that make numpy, OpenBLAS, MKL and torch select the
#: kernels of another instruction set on the same machine (a setting above the machine's own
#: instruction set falls back to it)
SETTINGS: dict[str, dict[str, str]] = {
    "native_1thread": dict(_ONE),
    "native_2threads": {k: "2" for k in _ONE},
    "avx2_1thread": dict(_ONE, NPY_DISABLE_CPU_FEATURES="X86_V4 AVX512_ICL AVX512_SPR",
                         OPENBLAS_CORETYPE="Haswell", ATEN_CPU_CAPABILITY="avx2",
                         MKL_ENABLE_INSTRUCTIONS="AVX2"),
    "x86v2_1thread": dict(_ONE, NPY_DISABLE_CPU_FEATURES="X86_V3 X86_V4 AVX512_ICL AVX512_SPR",
                          OPENBLAS_CORETYPE="Nehalem", ATEN_CPU_CAPABILITY="default",
                          MKL_ENABLE_INSTRUCTIONS="SSE4_2"),
}


def execute(name: str, runs: Path) -> Path:
    """Run every chapter at ``smoke`` under setting ``name``; the snapshot's path."""
    out = runs / f"{name}.json"
    env = {**os.environ, **SETTINGS[name]}
    with open(runs / f"{name}.log", "w") as log:
        subprocess.run([sys.executable, str(ROOT / "scripts" / "glue_snapshot.py"), "--profile",
                        "smoke", "--out", str(out)], env=env, cwd=ROOT, check=True, stdout=log,
                       stderr=subprocess.STDOUT)
    print(f"{name}: done", flush=True)
    return out


def rel_gap(a: float, b: float) -> float:
    """Relative difference of two numbers beyond :data:`ATOL` (0 within it; inf if NaN-ness
    differs)."""
    if math.isnan(a) or math.isnan(b):
        return 0.0 if math.isnan(a) and math.isnan(b) else math.inf
    if math.isinf(a) or math.isinf(b):
        return 0.0 if a == b else math.inf
    if abs(a - b) <= ATOL:
        return 0.0
    return abs(a - b) / max(abs(a), abs(b))


def derive(snapshots: dict[str, dict], baseline: dict) -> tuple[dict, list[str]]:
    """Per chapter ``{name: {"rtol", "spread", "aliases"}}`` for the numbers whose tolerance
    exceeds :data:`FLOOR` or that have aliases, and the unstable names."""
    sources = {"snapshot": baseline, **snapshots}
    out, unstable = {}, []
    for ch in sorted(baseline):
        names = sorted({k for s in sources.values() for k, v in s.get(ch, {}).items()
                        if is_number(v) and not excluded(k)})
        rtol, spread = {}, {}
        for k in names:
            vals = [s.get(ch, {}).get(k) for s in sources.values()]
            if not all(is_number(v) for v in vals):
                unstable.append(f"{ch}:{k}: a number in some runs only ({vals})")
                continue
            gap = max(rel_gap(float(a), float(b)) for a in vals for b in vals)
            if math.isinf(gap):
                unstable.append(f"{ch}:{k}: NaN or infinite in some runs only ({vals})")
                continue
            spread[k], rtol[k] = gap, max(FLOOR, MARGIN * gap)
        for k in {k for s in sources.values() for k in s.get(ch, {}) if k.endswith("_status")}:
            st = {str(s.get(ch, {}).get(k)) for s in sources.values()}
            if len(st) > 1:
                unstable.append(f"{ch}:{k}: status differs between settings ({sorted(st)})")
        groups: dict[tuple, list[str]] = {}
        for k in spread:
            vals = tuple(float(s[ch][k]) for s in sources.values())
            if all(math.isfinite(v) and v != round(v) for v in vals):
                groups.setdefault(vals, []).append(k)
        alias = {k: g for g in groups.values() if len(g) > 1 for k in g}
        for g in {tuple(g) for g in alias.values()}:
            top = max(rtol[k] for k in g)
            for k in g:
                rtol[k] = top
        out[ch] = {k: {"rtol": rtol[k], "spread": spread[k],
                       **({"aliases": sorted(set(alias[k]) - {k})} if k in alias else {})}
                   for k in sorted(spread) if rtol[k] > FLOOR or k in alias}
    return out, unstable


def margins(snapshots: dict[str, dict], baseline: dict, tol: dict) -> dict[str, dict]:
    """Per setting: the largest ``|difference| / allowed difference`` from the snapshot, where,
    and whether the snapshot test's rules pass on it."""
    res = {}
    for name, snap in snapshots.items():
        worst, where, fails = 0.0, "", 0
        for ch in baseline:
            rt = {"": FLOOR, **{k: v["rtol"] for k, v in tol.get(ch, {}).items()}}
            fails += len(differences(baseline[ch], snap.get(ch, {}), rt))
            for k, a in baseline[ch].items():
                b = snap.get(ch, {}).get(k)
                if excluded(k) or not (is_number(a) and is_number(b)):
                    continue
                a, b = float(a), float(b)
                if not (math.isfinite(a) and math.isfinite(b)):
                    continue
                allowed = rt.get(k, FLOOR) * max(abs(a), abs(b)) + ATOL
                if abs(a - b) / allowed > worst:
                    worst, where = abs(a - b) / allowed, f"{ch}:{k}"
        res[name] = {"largest_fraction_of_tolerance": worst, "where": where,
                     "differences_under_the_test_rules": fails}
    return res


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", required=True, help="folder for the per-setting snapshots and logs")
    ap.add_argument("--reuse", action="store_true", help="keep snapshots already in --runs")
    ap.add_argument("--jobs", type=int, default=2, help="settings executed at a time (>= 1)")
    ap.add_argument("--out", default=str(TOLERANCE_FILE))
    a = ap.parse_args(argv)
    if a.jobs < 1:
        ap.error(f"--jobs must be >= 1; got {a.jobs}")
    runs = Path(a.runs)
    runs.mkdir(parents=True, exist_ok=True)
    todo = [s for s in SETTINGS if not (a.reuse and (runs / f"{s}.json").is_file())]
    with ThreadPoolExecutor(a.jobs) as pool:
        list(pool.map(lambda s: execute(s, runs), todo))
    snapshots = {s: json.loads((runs / f"{s}.json").read_text()) for s in SETTINGS}
    baseline = json.loads(BASELINE.read_text())
    tol, unstable = derive(snapshots, baseline)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True, cwd=ROOT).stdout.strip()
    record = {
        "method": ("tolerance = max(floor, margin x spread); spread = the largest relative "
                   "difference (beyond atol) between the reviewed snapshot and smoke runs under "
                   "each setting; aliases (equal non-integer values in every run) share their "
                   "group's largest tolerance; names not listed get the floor; statuses exact"),
        "margin": MARGIN, "floor": FLOOR, "atol": ATOL,
        "settings": SETTINGS, "commit": commit,
        "measured": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": _machine(),
        "measured_margins": margins(snapshots, baseline, tol),
        "unstable": unstable,
        "tolerances": tol,
    }
    Path(a.out).write_text(json.dumps(record, indent=1, sort_keys=False) + "\n")
    n = sum(len(v) for v in tol.values())
    print(f"{n} numbers above the floor {FLOOR:g}; written to {a.out}")
    for s, m in record["measured_margins"].items():
        print(f"  {s}: largest fraction of tolerance {m['largest_fraction_of_tolerance']:.3f} "
              f"({m['where']}); differences {m['differences_under_the_test_rules']}")
    if unstable:
        print("unstable across settings:\n  " + "\n  ".join(unstable))
    return 1 if unstable else 0


def _machine() -> str:
    """The processor and its widest vector extension."""
    import platform

    flags = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").exists() else ""
    isa = next((f for f in ("avx512f", "avx2", "sse4_2") if f" {f}" in flags), "unknown")
    return f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, widest: {isa}"


if __name__ == "__main__":
    sys.exit(main())
