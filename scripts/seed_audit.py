"""Seed audit: rerun the chapters at several seeds and record, per claim, how stable its verdict is.

One task per chapter and seed (``stumplib.sweep``; chapter 4 of a seed starts after chapter 3 of
the same seed, whose certified scales it reloads from the result cache): the chapter is executed
with papermill (``-p profile quick -p seed k -p device cpu``). For every claim of the registry
(:data:`stumplib.book.registry.REGISTRY`) the task reads what the executed notebook glued: the rule's
status at that seed (``<key>_rule_status``, else ``<key>_status``) and the key number with its
interval (the registry's :attr:`~stumplib.book.registry.Claim.key_number`, ``<key>_estimate`` unless
the claim names another, with ``_lo`` and ``_hi``). A chapter that fails at a seed (after one
retry) is recorded with its error and **counts in the denominator**: ``"4/5, 1 failed"``.

After every task the driver rewrites (atomically)

- ``scripts/SEED_AUDIT.json``: command, commit and the library's code version
  (``stumplib.core.version.code_version()``, the hash the build record shows), machine, duration,
  and per claim of every chapter whose seeds have all finished the status at each seed, the
  agreement (``"5/5"``, ``"4/5, 1 failed"``), the failed seeds, the key number's mean and standard
  deviation over seeds, its mean nominal half-width, the **coverage ratio** (mean half-width /
  (1.96 x SD): below 1 the intervals under-cover the seed-to-seed spread) and how many seeds'
  intervals hold the mean; under ``"sweep"`` the store itself (every task's record, the recorded
  parameters: profile, device, library and chapter code versions);
- ``scripts/SEED_AUDIT.md``: the same as a table.

The chapters read the committed JSON (:func:`stumplib.book.claims.glue_seed_agreement`): a claim
whose audited seeds disagree (or fail) is reported undecided. Usage (from the repository root)::

    python scripts/seed_audit.py --seeds 0 1 2 3 4 --chapters 03 04 02 05 06 07 --workers 2

Cost at the ``quick`` profile from an empty result cache, one idle core (measured 2026-12-05,
``scripts/BENCH_sweeps.md``): chapter 2 10 s, 3 201 s, 4 232 s, 5 86 s, 6 128 s per seed (55
core-minutes for five seeds); with ``--workers 2`` on two idle cores, 31 minutes. (Chapter 6 was
split since: its flat-window part is chapter 7, which waits for chapter 6 of the same seed and
reloads its theory from the cache.)
"""
from __future__ import annotations

import argparse
import hashlib
import json
import math
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))
from stumplib.sweep.cluster import pin_threads  # noqa: E402

if __name__ == "__main__":  # not when a test imports the script
    pin_threads()  # the kernels inherit one thread each, in the driver (--workers 0) as in workers
import numpy as np  # noqa: E402

from stumplib.book import registry as K  # noqa: E402
from stumplib.sweep import cli  # noqa: E402
from stumplib.sweep.driver import Task  # noqa: E402
from stumplib.sweep.provenance import describe_run  # noqa: E402
from stumplib.sweep.files import atomic_write  # noqa: E402
from stumplib.sweep.store import Store  # noqa: E402

KIND = "seed_audit"


def chapter_path(tag: str) -> Path:
    """The notebook of a chapter given as ``"03"`` or ``"03_finite_corpus"``."""
    hits = sorted((ROOT / "chapters").glob(f"{tag}*.ipynb"))
    if len(hits) != 1:
        raise SystemExit(f"--chapters: {tag!r} matches {len(hits)} notebooks")
    return hits[0]


def chapter_notebooks(tag: str) -> list[Path]:
    """The notebooks of ``--chapters`` tag ``tag``: a bare chapter number (``"05"``) names every
    page of that chapter (``05_boundary_symmetrization`` and its section page ``05_two_heads``), a
    longer tag exactly one notebook (:func:`chapter_path`)."""
    if tag.isdigit():
        hits = sorted((ROOT / "chapters").glob(f"{tag}_*.ipynb"))
        if not hits:
            raise SystemExit(f"--chapters: {tag!r} matches no notebook")
        return hits
    return [chapter_path(tag)]


def task_id(chapter: str, seed: int) -> str:
    """``"ch03_seed2"`` for ``chapters/03_finite_corpus`` at seed 2; a chapter's section page
    (:data:`stumplib.book.registry.SECTION_PAGES`) by its whole name, ``"ch05_two_heads_seed2"``."""
    name = Path(chapter).name
    tag = name if f"chapters/{name}" in K.SECTION_PAGES else name.split("_")[0]
    return f"ch{tag}_seed{seed}"


def notebooks_version() -> str:
    """A hash of the code cells of every chapter (what the kernels execute besides the library)."""
    h = hashlib.sha256()
    for nb in sorted((ROOT / "chapters").glob("*.ipynb")):
        cells = json.loads(nb.read_text())["cells"]
        h.update(nb.name.encode() + b"\0")
        for c in cells:
            if c["cell_type"] == "code":
                h.update("".join(c["source"]).encode() + b"\0")
    return h.hexdigest()[:16]


def read_claim(g: dict, key: str) -> dict:
    """Status and key number (value, lo, hi) of one claim at one seed."""
    status = g.get(f"{key}_rule_status", g.get(f"{key}_status"))
    name = K.claim(key).key_number

    def num(k):
        v = g.get(k)
        return float(v) if isinstance(v, (int, float)) else float("nan")
    return {"status": status if isinstance(status, str) else None, "value": num(name),
            "lo": num(f"{name}_lo"), "hi": num(f"{name}_hi"), "number": name}


def audit_task(notebook: str, seed: int, profile: str, device: str, workdir: str,
               root: str) -> dict[str, Any]:
    """Execute one chapter at one seed and read its claims (one sweep task, on any worker)."""
    import os

    import papermill as pm

    # the kernel imports this checkout's library (the one whose code version the audit records)
    os.environ["PYTHONPATH"] = os.pathsep.join([root] + [p for p in os.environ.get(
        "PYTHONPATH", "").split(os.pathsep) if p and p != root])
    sys.path.insert(0, str(Path(root) / "scripts"))
    from glue_snapshot import glued_values

    nb = Path(notebook)
    out = Path(workdir) / f"{nb.stem}_seed{seed}.ipynb"
    out.parent.mkdir(parents=True, exist_ok=True)
    pm.execute_notebook(str(nb), str(out), cwd=str(nb.parent), progress_bar=False,
                        parameters={"profile": profile, "seed": seed, "device": device})
    g = glued_values(json.loads(out.read_text()))
    chapter = f"chapters/{nb.stem}"
    claims = {c.key: read_claim(g, c.key) for c in K.REGISTRY if c.chapter == chapter}
    return {"claims": {k: {f: (None if isinstance(v, float) and not math.isfinite(v) else v)
                           for f, v in r.items()} for k, r in claims.items()}}


def make_tasks(notebooks: list[Path], seeds: list[int], profile: str, device: str, workdir: str,
               gpu: bool = False) -> list[Task]:
    """One task per chapter and seed, in that order; chapter 4 of a seed waits for chapter 3 of the
    same seed when both are audited (it reloads chapter 3's certified scales from the cache), and
    chapter 7 for chapter 6 (it reloads chapter 6's theory)."""
    chapters = [f"chapters/{nb.stem}" for nb in notebooks]

    def first(tag: str) -> str | None:
        return next((c for c in chapters if Path(c).name.startswith(tag)), None)

    before = {"04": first("03"), "07": first("06")}  # chapter -> the chapter it waits for

    def after(c: str, s: int) -> tuple[str, ...]:
        b = before.get(Path(c).name[:2])
        return (task_id(b, s),) if b else ()
    return [Task(task_id(c, s), (str(nb), s, profile, device, workdir, str(ROOT)),
                 after=after(c, s), gpu=gpu)
            for c, nb in zip(chapters, notebooks) for s in seeds]


def summarise(per_seed: list[dict]) -> dict:
    """Agreement and coverage of one claim over the seeds; a record with ``failed`` set is a seed
    whose chapter failed: it has no status but counts in the denominator."""
    failed = sum(bool(r.get("failed")) for r in per_seed)
    st = [r["status"] for r in per_seed]

    def arr(k):
        return np.array([np.nan if r.get(k) is None else r[k] for r in per_seed], float)
    v, lo, hi = arr("value"), arr("lo"), arr("hi")
    ok = np.isfinite(v)
    out: dict = {"status": st, "value": [None if not np.isfinite(x) else float(x) for x in v],
                 "lo": [None if not np.isfinite(x) else float(x) for x in lo],
                 "hi": [None if not np.isfinite(x) else float(x) for x in hi],
                 "number": next((r["number"] for r in per_seed if r.get("number")), "")}
    if failed:
        out["failed"] = failed
    done = [s for s in st if s]
    if done or failed:
        top = max(set(done), key=done.count) if done else "none"
        n, total = done.count(top), len(done) + failed
        tail = f", {failed} failed" if failed else ""
        out["agreement"] = f"{n}/{total}{tail}"
        out["summary"] = f"{top} at {n} of {total} seeds{tail}"
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


def build_audit(manifest: dict, results: dict, seeds: list[int], chapters: list[str]) -> dict:
    """The audit (the layout the book reads) from the store's records: every chapter whose tasks at
    all ``seeds`` have finished, done or failed, in the order of ``chapters``."""
    tasks, runs = manifest.get("tasks", {}), manifest.get("runs", [])
    first, last = (runs[0], runs[-1]) if runs else ({}, {})
    params = manifest.get("params", {})
    audit: dict[str, Any] = {
        "command": first.get("command", ""), "commit": first.get("commit", "unknown"),
        "code_version": params.get("code_version"), "machine": first.get("machine", ""),
        "profile": params.get("profile"), "seeds": list(seeds), "chapters_done": [],
        "chapter_seconds": {}, "started": first.get("started", ""),
        "duration_s": round(sum(float(r.get("seconds", 0.0)) for r in runs), 1), "claims": {},
        "failed": []}
    if len(runs) > 1:
        audit["resumed"] = [{k: r.get(k) for k in ("command", "commit", "started")} for r in runs[1:]]
    for chapter in chapters:
        ids = [task_id(chapter, s) for s in seeds]
        if not all(tasks.get(t, {}).get("status") in ("done", "failed") for t in ids):
            continue
        audit["chapters_done"].append(chapter)
        audit["chapter_seconds"][chapter] = round(sum(tasks[t].get("seconds") or 0.0 for t in ids), 1)
        for t in ids:
            if tasks[t]["status"] == "failed":
                audit["failed"].append({"task": t, "error": tasks[t].get("error", "?")})
        for c in K.REGISTRY:
            if c.chapter != chapter:
                continue
            per = [results[t]["claims"].get(c.key, {"status": None, "number": c.key_number})
                   if tasks[t]["status"] == "done" else
                   {"status": None, "failed": True, "number": c.key_number} for t in ids]
            audit["claims"][c.key] = summarise(per)
    if all(tasks.get(task_id(c, s), {}).get("status") in ("done", "failed")
           for c in chapters for s in seeds) and last.get("closed"):
        audit["finished"] = last["closed"]
    return audit


def write_md(audit: dict, out_md: Path) -> None:
    """``SEED_AUDIT.md``: the audit as a table, written atomically."""
    lines = [f"# Seed audit ({audit['profile']} profile)", "",
             f"- command: `{audit['command']}`", f"- commit: {audit['commit']}",
             f"- library code version: {audit.get('code_version') or 'not recorded'}",
             f"- machine: {audit['machine']}", f"- started {audit['started']}, finished "
             f"{audit.get('finished', 'running')}, {audit['duration_s'] / 60:.1f} minutes",
             f"- seeds: {', '.join(map(str, audit['seeds']))}; chapters done: "
             f"{', '.join(audit['chapters_done']) or 'none'}"]
    for f in audit.get("failed", []):
        lines.append(f"- failed: {f['task']}: {f['error'][:200]}")
    for r in audit.get("reruns", []):
        lines.append(f"- rerun of {', '.join(r['chapters_done'])} at commit {r['commit']} "
                     f"({r['duration_s'] / 60:.1f} minutes): `{r['command']}`")
    lines += ["",
              "Coverage ratio: mean nominal 95% half-width over 1.96 x the seed-to-seed standard "
              "deviation of the key number (below 1: the intervals under-cover).", "",
              "| claim | key number | status per seed | agree | mean | SD | half-width | "
              "coverage | intervals holding the mean |", "| --- | --- | --- | --- | --- | --- | "
              "--- | --- | --- |"]
    for c in K.REGISTRY:
        a = audit["claims"].get(c.key)
        if not a or not (any(a.get("status", [])) or a.get("failed")):
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
    text = "\n".join(lines) + "\n"
    atomic_write(out_md, lambda fh: fh.write(text.encode()))


def write(audit: dict, out_json: Path, out_md: Path) -> None:
    """Write the audit (JSON, keeping any ``"sweep"`` store in it) and its table, atomically."""
    text = json.dumps(audit, indent=1, ensure_ascii=False) + "\n"
    atomic_write(out_json, lambda fh: fh.write(text.encode()))
    write_md(audit, out_md)


def merge(out_json: Path, rerun_json: Path) -> dict:
    """Replace the claims of the chapters audited in ``rerun_json`` (a rerun after a change to
    them) in ``out_json``; the rerun's commit, code version, command and chapters are listed under
    ``reruns``."""
    audit, rerun = json.loads(out_json.read_text()), json.loads(rerun_json.read_text())
    if audit["profile"] != rerun["profile"] or audit["seeds"] != rerun["seeds"]:
        raise SystemExit("--merge-from: the rerun must use the same profile and seeds")
    for chapter in rerun["chapters_done"]:
        for c in K.REGISTRY:
            if c.chapter == chapter and c.key in rerun["claims"]:
                audit["claims"][c.key] = rerun["claims"][c.key]
        if chapter not in audit["chapters_done"]:
            audit["chapters_done"].append(chapter)
        audit["chapter_seconds"][chapter] = rerun["chapter_seconds"][chapter]
    audit.setdefault("reruns", []).append({k: rerun.get(k) for k in (
        "command", "commit", "code_version", "started", "duration_s", "chapters_done")})
    write(audit, out_json, out_json.with_suffix(".md"))
    return audit


def main(argv: list[str] | None = None) -> int:
    """Run (or resume) the audit; the exit status of :func:`stumplib.sweep.cli.run`."""
    from stumplib.core.device import resolve_device
    from stumplib.core.version import code_version

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    ap.add_argument("--chapters", nargs="+", default=["03", "04", "02", "05", "06", "07"],
                    help="in this order (longest first keeps the workers busy)")
    ap.add_argument("--profile", default="quick", choices=["smoke", "quick", "full"])
    ap.add_argument("--device", default="cpu", help="the chapters' device: cpu, cuda or cuda:K")
    ap.add_argument("--workdir", default="/tmp/seed_audit", help="executed notebooks go here")
    ap.add_argument("--out", default=str(ROOT / "scripts" / "SEED_AUDIT.json"))
    ap.add_argument("--merge-from", default=None, metavar="FILE",
                    help="run nothing: merge the chapters audited in FILE (a later rerun of some "
                         "chapters) into --out, recording the rerun's commit and command")
    cli.add_arguments(ap)
    args = ap.parse_args(argv)
    if args.merge_from:
        merge(Path(args.out), Path(args.merge_from))
        return 0
    cli.check_arguments(ap, args)
    if len(set(args.seeds)) != len(args.seeds) or len(args.seeds) < 2 or min(args.seeds) < 0:
        ap.error(f"--seeds: at least two distinct non-negative seeds, each once; got {args.seeds}")
    try:
        device = resolve_device(args.device)
    except ValueError as e:
        ap.error(str(e))
    notebooks = [nb for t in args.chapters for nb in chapter_notebooks(t)]
    chapters = [f"chapters/{nb.stem}" for nb in notebooks]
    if len(set(chapters)) != len(chapters):
        ap.error(f"--chapters: each chapter once; got {args.chapters}")
    params = {"profile": args.profile, "device_kind": device.type, "device": args.device,
              "seed_scheme": "each chapter's parameter seed = the audited seed",
              "code_version": code_version(), "notebooks_version": notebooks_version()}
    tasks = make_tasks(notebooks, args.seeds, args.profile, args.device, args.workdir,
                       gpu=device.type == "cuda")
    out_json = Path(args.out)
    t0 = time.time()

    def view(store: Store) -> dict[str, Any]:
        run = store.manifest["runs"][store.run_index]
        run["seconds"] = round(time.time() - t0, 1)
        return build_audit(store.manifest, store.results, args.seeds, chapters)

    store = Store(out_json, kind=KIND, params=params, view=view,
                  run=describe_run("scripts/seed_audit.py", argv))

    def tables(task: str | None = None) -> None:
        if store.manifest:
            write_md(build_audit(store.manifest, store.results, args.seeds, chapters),
                     out_json.with_suffix(".md"))
    gpus = 0
    if device.type == "cuda" and args.scheduler is None:
        import torch

        gpus = torch.cuda.device_count()
        args.workers = gpus if args.workers is None else args.workers
    return cli.run(store, tasks, audit_task, args, gpus=gpus, on_record=tables, on_close=tables)


if __name__ == "__main__":
    raise SystemExit(main())
