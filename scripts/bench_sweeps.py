"""Benchmark of the sweep layer (``stumplib.sweep``): throughput of minimiser tasks on 1 and 2
workers, against the same tasks in one plain process and in two plain processes (the hardware's
limit), and the seed audit serial against ``--workers 2``.

(a) ``python3 scripts/bench_sweeps.py [--d 80 --tasks 12 --rounds 2] [--write]``: the tasks of
    ``scripts/phase_minimisers.py`` (one seed at one d, every alpha of ``--alphas``, no plain GD) run

    - in this process, one after the other (``--workers 0``: the driver, store writes included);
    - on a LocalCluster of 1 and of 2 single-threaded workers (the cluster's start-up excluded,
      measured apart);
    - as a reference, in two plain Python processes each running half of the tasks (no Dask, no
      store), started together: what two cores give at best.

    Imports and a first call are made before any clock starts (workers too: a long sweep pays them
    once per worker).

    Tasks per second from each configuration's best round (the one least disturbed by other jobs on
    a shared machine), with the medians and every round; configurations alternate within a round,
    and each round also measures the machine's own 2-way parallelism (a pure-Python loop in one and
    in two processes).
(b) ``python3 scripts/bench_sweeps.py --audit [--write]``: the five-seed ``quick`` audit
    (``scripts/seed_audit.py``) with ``--workers 0`` and with ``--workers 2``, wall time of each (about
    1.5 hours of an idle 2-core machine in all); both outputs, and each run's own empty result
    cache, go to a temporary folder. ``--keep DIR`` copies both audits there with ``bench.json``
    (each run's wall time, the machine's parallelism and load before it, the commit);
    ``--serial-from DIR`` takes the serial run from such a folder instead of rerunning it (for a
    change that leaves the serial path alone, such as the driver's scheduling: the table says
    which commit and code the serial run measured).

``--write`` replaces the matching section of ``scripts/BENCH_sweeps.md``.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from stumplib.sweep.cluster import pin_threads  # noqa: E402

if __name__ == "__main__":  # not when a test imports the script
    pin_threads()  # before numpy and torch start their thread pools

BENCH = ROOT / "scripts" / "BENCH_sweeps.md"


def minimiser_module():
    """``scripts/phase_minimisers.py`` as a module whose functions the workers receive by value."""
    import cloudpickle

    spec = importlib.util.spec_from_file_location("phase_minimisers_bench",
                                                  ROOT / "scripts" / "phase_minimisers.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    sys.modules[spec.name] = mod
    cloudpickle.register_pickle_by_value(mod)
    return mod


def params(d: int, alphas: list[float]) -> dict:
    """The minimiser script's parameters at the defaults, plain GD off."""
    mod = minimiser_module()
    _, p, _, _ = mod.parse(["--d", str(d), "--seeds", "1", "--alphas", *map(str, alphas),
                            "--gd-seeds", "0", "--workers", "0"])
    return p


def run_plain(d: int, seeds: list[int], alphas: list[float]) -> float:
    """The tasks one after the other in this process, no Dask, no store; wall seconds (imports and
    a first call made before the clock starts)."""
    mod = minimiser_module()
    p = params(d, alphas)
    mod.minimiser_task(4, 0, p)
    t0 = time.perf_counter()
    for s in seeds:
        mod.minimiser_task(d, s, p)
    return time.perf_counter() - t0


def run_sweep_once(d: int, n: int, alphas: list[float], workers: int, tmp: Path) -> dict:
    """One sweep of ``n`` tasks on ``workers`` workers (0: in the driver); seconds and start-up."""
    from stumplib.sweep.cluster import connect
    from stumplib.sweep.driver import Task, run_sweep
    from stumplib.sweep.store import Store

    mod = minimiser_module()
    p = params(d, alphas)
    tasks = [Task(f"d{d}_seed{s}", (d, s, p)) for s in range(n)]
    out = tmp / f"w{workers}_{time.time_ns()}.npz"
    t0 = time.perf_counter()
    with connect(workers, dashboard_address=":0", announce=None) as client:
        if client is not None:  # every worker up, its imports and a first call done
            client.run(mod.minimiser_task, 4, 0, p)
        start = time.perf_counter() - t0
        with Store(out, kind="bench", params={"d": d}) as store:
            t1 = time.perf_counter()
            s = run_sweep(tasks, mod.minimiser_task, store, client=client, progress=False)
            wall = time.perf_counter() - t1
    assert s.done == n, s.line()
    return {"wall": wall, "startup": start}


def bench_minimisers(a: argparse.Namespace) -> str:
    """(a): the table, as Markdown."""
    seeds = list(range(a.tasks))
    rows: dict[str, list[float]] = {k: [] for k in ("plain", "w0", "w1", "w2", "two")}
    starts: dict[str, list[float]] = {"w1": [], "w2": []}
    cpu: list[float] = []
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(a.rounds):
            rows["plain"].append(run_plain(a.d, seeds, a.alphas))
            for w in (0, 1, 2):
                r = run_sweep_once(a.d, a.tasks, a.alphas, w, Path(tmp))
                rows[f"w{w}"].append(r["wall"])
                if w:
                    starts[f"w{w}"].append(r["startup"])
            rows["two"].append(two_plain_processes(a.d, seeds, a.alphas))
            cpu.append(cpu_reference())
    best = {k: min(v) for k, v in rows.items()}  # the round least disturbed by other jobs
    med = {k: statistics.median(v) for k, v in rows.items()}
    rate = {k: a.tasks / v for k, v in best.items()}
    mrate = {k: a.tasks / v for k, v in med.items()}
    label = {"plain": "one plain process (no Dask, no store)", "w0": "--workers 0 (in the driver)",
             "w1": "--workers 1", "w2": "--workers 2",
             "two": "two plain processes, half the tasks each (the hardware's limit)"}
    lines = [f"Minimiser tasks at d = {a.d}, alphas {', '.join(map(str, a.alphas))} (one seed per "
             f"task, no plain GD), {a.tasks} tasks per run, {a.rounds} rounds (the configurations "
             f"alternate within a round); {platform.node()}, {os.cpu_count()} CPUs, load average "
             f"{os.getloadavg()[0]:.1f} at the end.", "",
             "| run | best wall s | tasks / s (best) | vs one plain process | median wall s | "
             "every round, wall s |", "| --- | --- | --- | --- | --- | --- |"]
    for k in ("plain", "w0", "w1", "w2", "two"):
        lines.append(f"| {label[k]} | {best[k]:.2f} | {rate[k]:.3f} | {rate[k] / rate['plain']:.2f}x "
                     f"| {med[k]:.2f} | {', '.join(f'{x:.2f}' for x in rows[k])} |")
    lines += ["", f"- 2 workers / 1 worker: **{rate['w2'] / rate['w1']:.2f}x** the tasks per second "
              f"(best rounds; medians {mrate['w2'] / mrate['w1']:.2f}x); 2 workers / two plain "
              f"processes: {rate['w2'] / rate['two']:.2f} (medians {mrate['w2'] / mrate['two']:.2f}; "
              "1 is the limit).",
              f"- The machine's own 2-way parallelism, per round: two processes of a pure-Python loop "
              f"run at {', '.join(f'{x:.2f}' for x in cpu)}x the throughput of one (2.00 on two free "
              "cores; below that, other jobs hold a core).",
              f"- LocalCluster start-up (excluded above): {statistics.median(starts['w1']):.1f} s "
              f"(1 worker), {statistics.median(starts['w2']):.1f} s (2 workers)."]
    return "\n".join(lines)


def two_plain_processes(d: int, seeds: list[int], alphas: list[float]) -> float:
    """Two plain processes each running half of the seeds, started together once both have done
    their imports and a first call; the slower one's seconds."""
    halves = [seeds[0::2], seeds[1::2]]
    code = ("import sys, json, runpy\n"
            f"m = runpy.run_path({str(Path(__file__))!r}, run_name='bench_child')\n"
            "d, seeds, alphas = json.loads(sys.stdin.readline())\n"
            "mod = m['minimiser_module'](); p = m['params'](d, alphas); mod.minimiser_task(4, 0, p)\n"
            "print('ready', flush=True); sys.stdin.readline()\n"
            "t0 = m['time'].perf_counter()\n"
            "for s in seeds: mod.minimiser_task(d, s, p)\n"
            "print(m['time'].perf_counter() - t0, flush=True)\n")
    env = dict(os.environ, PYTHONPATH=str(ROOT), **{k: "1" for k in (
        "OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "STUMPLIB_THREADS")})
    procs = [subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True, env=env, cwd=ROOT) for _ in halves]
    for p, h in zip(procs, halves):
        p.stdin.write(json.dumps([d, h, alphas]) + "\n")
        p.stdin.flush()
    for p in procs:
        if p.stdout.readline().strip() != "ready":
            raise RuntimeError("a plain process failed")
    for p in procs:
        p.stdin.write("go\n")
        p.stdin.flush()
    times = [float(p.stdout.readline()) for p in procs]
    for p in procs:
        p.wait()
    return max(times)


def cpu_reference(n: int = 20_000_000) -> float:
    """How much two processes gain over one on this machine: the throughput ratio of a pure-Python
    loop run in two processes at once against one process (2.0 on two free cores)."""
    code = f"import time\nt = time.perf_counter()\nx = 0\nfor i in range({n}): x += i\n" \
           "print(time.perf_counter() - t)"

    def go(k: int) -> float:
        t0 = time.perf_counter()
        ps = [subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE) for _ in range(k)]
        for q in ps:
            q.wait()
        return time.perf_counter() - t0
    return 2 * go(1) / go(2)


def bench_audit(a: argparse.Namespace) -> str:
    """(b): serial against --workers 2, as Markdown.

    Before each run the machine's own 2-way parallelism is measured (``cpu_reference``: 2.0 on
    two free cores) and the load average noted, so that a run disturbed by another job shows.
    Each run starts from an empty result cache of its own (``STUMPBOOK_RESULTS``): both compute
    everything, as an audit of new code does.
    Each audit records its tasks' own seconds (``chapter_seconds``); their sum over the wall time
    is the number of cores the run kept busy."""
    walls, refs, loads, busy, audits = {}, {}, {}, {}, {}
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, text=True,
                            capture_output=True).stdout.strip()
    commits = {0: commit, 2: commit}
    if a.serial_from:  # the serial run of an earlier benchmark, as --keep left it
        src = Path(a.serial_from)
        audits[0] = json.loads((src / "audit0.json").read_text())
        rec = json.loads((src / "bench.json").read_text())["0"]
        walls[0], refs[0], loads[0], commits[0] = (rec["wall_s"], rec["parallelism"],
                                                   rec["load"], rec["commit"])
        busy[0] = sum(audits[0]["chapter_seconds"].values()) / walls[0]
    with tempfile.TemporaryDirectory() as tmp:
        for w in ((2,) if a.serial_from else (0, 2)):
            refs[w], loads[w] = cpu_reference(), os.getloadavg()[0]
            t0 = time.perf_counter()
            r = subprocess.run([sys.executable, str(ROOT / "scripts" / "seed_audit.py"), "--seeds",
                                *map(str, a.audit_seeds), "--profile", "quick", "--workers", str(w),
                                "--no-progress", "--workdir", f"{tmp}/nb{w}",
                                "--out", f"{tmp}/audit{w}.json"], cwd=ROOT,
                               env=dict(os.environ, STUMPBOOK_RESULTS=f"{tmp}/results{w}"))
            walls[w] = time.perf_counter() - t0
            if r.returncode:
                raise SystemExit(f"the audit with --workers {w} failed (exit {r.returncode})")
            audits[w] = json.loads(Path(f"{tmp}/audit{w}.json").read_text())
            if a.keep:  # the audit itself (for example as the committed audit of this code)
                Path(a.keep).mkdir(parents=True, exist_ok=True)
                for suffix in (".json", ".md"):
                    shutil.copy(f"{tmp}/audit{w}{suffix}", Path(a.keep) / f"audit{w}{suffix}")
            busy[w] = sum(audits[w]["chapter_seconds"].values()) / walls[w]
            print(f"--workers {w}: {walls[w]:.0f} s wall, {busy[w]:.2f} cores busy", flush=True)
            if a.keep:
                rec_path = Path(a.keep) / "bench.json"
                rec = json.loads(rec_path.read_text()) if rec_path.exists() else {}
                rec[str(w)] = {"wall_s": round(walls[w], 1), "parallelism": round(refs[w], 3),
                               "load": round(loads[w], 2), "commit": commit}
                rec_path.write_text(json.dumps(rec, indent=1))
        refs["end"], loads["end"] = cpu_reference(), os.getloadavg()[0]
    same = audits[0]["claims"] == audits[2]["claims"]
    chapters = sorted(audits[0]["chapter_seconds"])
    rows = [f"| {c.split('/')[-1]} | {audits[0]['chapter_seconds'][c]:.0f} | "
            f"{audits[2]['chapter_seconds'][c]:.0f} |" for c in chapters]
    which = (f"commit {commit}, library code {audits[0]['code_version']}" if commits[0] == commit
             else f"--workers 2: commit {commit}, library code {audits[2]['code_version']}; "
                  f"serial (from `{a.serial_from}`, not rerun): commit {commits[0]}, library "
                  f"code {audits[0]['code_version']}")
    return "\n".join([
        f"Five-seed quick audit (seeds {', '.join(map(str, a.audit_seeds))}), every chapter, "
        f"{which}; {platform.node()}, {os.cpu_count()} CPUs; measured "
        f"{time.strftime('%Y-%m-%d', time.gmtime())}.", "",
        "| run | wall s | task seconds / wall (cores kept busy) | machine's 2-way parallelism "
        "before | load average before |", "| --- | --- | --- | --- | --- |",
        f"| --workers 0 (serial) | {walls[0]:.0f} | {busy[0]:.2f} | {refs[0]:.2f}x | "
        f"{loads[0]:.1f} |",
        f"| --workers 2 | {walls[2]:.0f} | {busy[2]:.2f} | {refs[2]:.2f}x | {loads[2]:.1f} |", "",
        f"At the end: 2-way parallelism {refs['end']:.2f}x, load average {loads['end']:.1f}.", "",
        "Task seconds per chapter (the sum over the five seeds):", "",
        "| chapter | serial | --workers 2 |", "| --- | --- | --- |", *rows, "",
        f"- ratio --workers 2 / serial: **{walls[2] / walls[0]:.2f}** (target: at most 0.6).",
        f"- the two audits' claims are {'identical' if same else 'NOT identical'}."])


def write_section(name: str, text: str) -> None:
    """Replace the section between ``<!-- name:start -->`` and ``<!-- name:end -->``."""
    doc = BENCH.read_text()
    start, end = f"<!-- {name}:start -->", f"<!-- {name}:end -->"
    new = re.sub(re.escape(start) + r".*?" + re.escape(end), lambda m: f"{start}\n{text}\n{end}",
                 doc, flags=re.S)
    BENCH.write_text(new)


def main(argv: list[str] | None = None) -> int:
    """Run (a), or (b) with ``--audit``."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--d", type=int, default=80)
    ap.add_argument("--tasks", type=int, default=12)
    ap.add_argument("--alphas", type=float, nargs="+", default=[1.0164, 1.25])
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--audit", action="store_true", help="(b): the seed audit, about 1.5 hours")
    ap.add_argument("--audit-seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    ap.add_argument("--write", action="store_true", help="update scripts/BENCH_sweeps.md")
    ap.add_argument("--keep", metavar="DIR", help="(b): copy both audits' JSON and Markdown there")
    ap.add_argument("--serial-from", metavar="DIR",
                    help="(b): take the serial run from an earlier --keep DIR")
    a = ap.parse_args(argv)
    if a.d < 4 or a.tasks < 2 or a.rounds < 1:
        ap.error("--d >= 4, --tasks >= 2, --rounds >= 1")
    if a.serial_from and not (a.audit and all(
            (Path(a.serial_from) / f).is_file() for f in ("audit0.json", "bench.json"))):
        ap.error("--serial-from DIR needs --audit and DIR/audit0.json, DIR/bench.json "
                 "(an earlier --keep DIR)")
    text = bench_audit(a) if a.audit else bench_minimisers(a)
    print(text)
    if a.write:
        write_section("audit" if a.audit else "minimisers", text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
