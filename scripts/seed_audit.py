"""Seed audit: rerun the chapters at several seeds and record, per claim, how stable its verdict is.

For each chapter (``--chapters``) and each seed (``--seeds``, at least 5 for the book) the chapter
is executed with papermill at the ``quick`` profile (``-p profile quick -p seed k``). For every
claim of the registry (:data:`stumplib.book.registry.REGISTRY`) the script reads what the executed
notebook glued: the rule's status at that seed (``<key>_rule_status``, else ``<key>_status``) and
the key number with its interval (the registry's :attr:`~stumplib.book.registry.Claim.key_number`,
``<key>_estimate`` unless the claim names another, with ``_lo`` and ``_hi``). It then writes, after every chapter (so a partial run
is usable),

- ``scripts/SEED_AUDIT.json``: command, commit, machine, duration, and per claim the status at
  each seed, the agreement (``"5/5"``), the key number's mean and standard deviation over seeds,
  its mean nominal half-width, the **coverage ratio** (mean half-width / (1.96 x SD): below 1 the
  intervals under-cover the seed-to-seed spread) and how many seeds' intervals hold the mean;
- ``scripts/SEED_AUDIT.md``: the same as a table.

The chapters read the committed JSON (:func:`stumplib.book.claims.glue_seed_agreement`): a claim
whose audited seeds disagree is reported undecided. Usage (from the repository root)::

    python scripts/seed_audit.py --seeds 0 1 2 3 4 --chapters 02 03 04 05 06

Cost at the ``quick`` profile, one idle core: chapter 2 ~15 s, 3 ~170 s, 4 ~130 s, 5 ~30 s,
6 ~150 s per seed (about 40 core-minutes for five seeds).
"""
from __future__ import annotations

import argparse
import json
import math
import os
import platform
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from glue_snapshot import glued_values  # noqa: E402  (the one reader of glued values)
from stumplib.book import registry as R  # noqa: E402


def chapter_path(tag: str) -> Path:
    """The notebook of a chapter given as ``"03"`` or ``"03_finite_corpus"``."""
    hits = sorted((ROOT / "chapters").glob(f"{tag}*.ipynb"))
    if len(hits) != 1:
        raise SystemExit(f"--chapters: {tag!r} matches {len(hits)} notebooks")
    return hits[0]


def read_claim(g: dict, key: str) -> dict:
    """Status and key number (value, lo, hi) of one claim at one seed."""
    status = g.get(f"{key}_rule_status", g.get(f"{key}_status"))
    name = R.claim(key).key_number

    def num(k):
        v = g.get(k)
        return float(v) if isinstance(v, (int, float)) else float("nan")
    return {"status": status if isinstance(status, str) else None, "value": num(name),
            "lo": num(f"{name}_lo"), "hi": num(f"{name}_hi"), "number": name}


def summarise(per_seed: list[dict]) -> dict:
    """Agreement and coverage of one claim over the seeds."""
    st = [r["status"] for r in per_seed]
    v = np.array([r["value"] for r in per_seed], float)
    lo = np.array([r["lo"] for r in per_seed], float)
    hi = np.array([r["hi"] for r in per_seed], float)
    ok = np.isfinite(v)
    out: dict = {"status": st, "value": [None if not np.isfinite(x) else float(x) for x in v],
                 "lo": [None if not np.isfinite(x) else float(x) for x in lo],
                 "hi": [None if not np.isfinite(x) else float(x) for x in hi],
                 "number": per_seed[0]["number"] if per_seed else ""}
    done = [s for s in st if s]
    if done:
        top = max(set(done), key=done.count)
        out["agreement"] = f"{done.count(top)}/{len(done)}"
        out["summary"] = f"{top} at {done.count(top)} of {len(done)} seeds"
    if ok.sum() >= 2:
        mean, sd = float(v[ok].mean()), float(v[ok].std(ddof=1))
        fin = ok & np.isfinite(lo) & np.isfinite(hi)
        half = float(np.mean((hi[fin] - lo[fin]) / 2)) if fin.any() else float("nan")
        out.update(mean=mean, sd=sd, half_width=half if math.isfinite(half) else None)
        if sd > 0 and math.isfinite(half):
            out["coverage_ratio"] = half / (1.96 * sd)
        out["intervals_holding_mean"] = int(np.sum(fin & (lo <= mean) & (hi >= mean)))
        out["seeds_with_interval"] = int(fin.sum())
    return out


def write(audit: dict, out_json: Path, out_md: Path) -> None:
    out_json.write_text(json.dumps(audit, indent=1, ensure_ascii=False) + "\n")
    lines = [f"# Seed audit ({audit['profile']} profile)", "",
             f"- command: `{audit['command']}`", f"- commit: {audit['commit']}",
             f"- machine: {audit['machine']}", f"- started {audit['started']}, finished "
             f"{audit.get('finished', 'running')}, {audit['duration_s'] / 60:.1f} minutes",
             f"- seeds: {', '.join(map(str, audit['seeds']))}; chapters done: "
             f"{', '.join(audit['chapters_done']) or 'none'}"]
    for r in audit.get("reruns", []):
        lines.append(f"- rerun of {', '.join(r['chapters_done'])} at commit {r['commit']} "
                     f"({r['duration_s'] / 60:.1f} minutes): `{r['command']}`")
    lines += ["",
             "Coverage ratio: mean nominal 95% half-width over 1.96 x the seed-to-seed standard "
             "deviation of the key number (below 1: the intervals under-cover).", "",
             "| claim | key number | status per seed | agree | mean | SD | half-width | "
             "coverage | intervals holding the mean |", "| --- | --- | --- | --- | --- | --- | "
             "--- | --- | --- |"]
    for c in R.REGISTRY:
        a = audit["claims"].get(c.key)
        if not a or not any(a.get("status", [])):
            lines.append(f"| `{c.key}` | | not audited | | | | | | |")
            continue

        def f(k, fmt=".4g"):
            v = a.get(k)
            return "" if v is None else format(v, fmt)
        lines.append(f"| `{c.key}` | `{a.get('number', '')}` | "
                     f"{', '.join(s or '-' for s in a['status'])} | {a.get('agreement', '')} | "
                     f"{f('mean')} | {f('sd')} | {f('half_width')} | "
                     f"{'no spread' if a.get('sd') == 0 else f('coverage_ratio', '.2f')} "
                     f"| {a.get('intervals_holding_mean', '')}/{a.get('seeds_with_interval', '')} |")
    out_md.write_text("\n".join(lines) + "\n")


def merge(out_json: Path, rerun_json: Path) -> dict:
    """Replace the claims of the chapters audited in ``rerun_json`` (a rerun after a change to
    them) in ``out_json``; the rerun's commit, command and chapters are listed under ``reruns``."""
    audit, rerun = json.loads(out_json.read_text()), json.loads(rerun_json.read_text())
    if audit["profile"] != rerun["profile"] or audit["seeds"] != rerun["seeds"]:
        raise SystemExit("--merge-from: the rerun must use the same profile and seeds")
    for chapter in rerun["chapters_done"]:
        for c in R.REGISTRY:
            if c.chapter == chapter and c.key in rerun["claims"]:
                audit["claims"][c.key] = rerun["claims"][c.key]
        if chapter not in audit["chapters_done"]:
            audit["chapters_done"].append(chapter)
        audit["chapter_seconds"][chapter] = rerun["chapter_seconds"][chapter]
    audit.setdefault("reruns", []).append({k: rerun[k] for k in (
        "command", "commit", "started", "duration_s", "chapters_done")})
    write(audit, out_json, out_json.with_suffix(".md"))
    return audit


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    ap.add_argument("--chapters", nargs="+", default=["02", "03", "04", "05", "06"])
    ap.add_argument("--profile", default="quick", choices=["smoke", "quick", "full"])
    ap.add_argument("--workdir", default="/tmp/seed_audit", help="executed notebooks go here")
    ap.add_argument("--out", default=str(ROOT / "scripts" / "SEED_AUDIT.json"))
    ap.add_argument("--merge-from", default=None, metavar="FILE",
                    help="run nothing: merge the chapters audited in FILE (a later rerun of some "
                         "chapters) into --out, recording the rerun's commit and command")
    ap.add_argument("--commit", default=None,
                    help="the audited commit (default: git rev-parse HEAD of this checkout)")
    args = ap.parse_args(argv)
    if args.merge_from:
        merge(Path(args.out), Path(args.merge_from))
        return 0
    if len(set(args.seeds)) < 2 or min(args.seeds) < 0:
        raise SystemExit("--seeds: at least two distinct non-negative seeds")
    import papermill as pm

    work = Path(args.workdir)
    work.mkdir(parents=True, exist_ok=True)
    out_json = Path(args.out)
    git = dict(cwd=ROOT, capture_output=True, text=True)
    commit = args.commit or subprocess.run(["git", "rev-parse", "HEAD"], **git).stdout.strip()
    dirty = "" if args.commit else subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=no"], **git).stdout.strip()
    commit = commit or "unknown"
    t0 = time.time()
    audit = {"command": "python scripts/seed_audit.py " + " ".join(argv or sys.argv[1:]),
             "commit": commit + (" (with uncommitted changes)" if dirty else ""),
             "machine": f"{platform.node()}, {os.cpu_count()} CPUs, {platform.platform()}",
             "profile": args.profile, "seeds": args.seeds, "chapters_done": [],
             "chapter_seconds": {}, "started": datetime.now(timezone.utc).isoformat(timespec="seconds"),
             "duration_s": 0.0, "claims": {}}
    for tag in args.chapters:
        nb = chapter_path(tag)
        chapter = f"chapters/{nb.stem}"
        keys = [c.key for c in R.REGISTRY if c.chapter == chapter]
        per = {k: [] for k in keys}
        tc = time.time()
        for seed in args.seeds:
            out = work / f"{nb.stem}_seed{seed}.ipynb"
            ts = time.time()
            try:
                pm.execute_notebook(str(nb), str(out), parameters={"profile": args.profile,
                                                                   "seed": seed},
                                    cwd=str(ROOT / "chapters"), progress_bar=False)
                g = glued_values(json.loads(out.read_text()))
            except Exception as exc:  # noqa: BLE001 - a failed seed is recorded, not fatal
                print(f"{nb.stem} seed {seed}: failed ({type(exc).__name__}: {exc})"[:400],
                      flush=True)
                g = {}
            for k in keys:
                per[k].append(read_claim(g, k))
            print(f"{nb.stem} seed {seed}: {time.time() - ts:.0f} s", flush=True)
        for k in keys:
            audit["claims"][k] = summarise(per[k])
        audit["chapters_done"].append(chapter)
        audit["chapter_seconds"][chapter] = round(time.time() - tc, 1)
        audit["duration_s"] = round(time.time() - t0, 1)
        write(audit, out_json, out_json.with_suffix(".md"))
    audit["finished"] = datetime.now(timezone.utc).isoformat(timespec="seconds")
    write(audit, out_json, out_json.with_suffix(".md"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
