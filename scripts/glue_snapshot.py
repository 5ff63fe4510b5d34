"""Execute every chapter at a profile under papermill, write its glued values to JSON, and compare
two such snapshots: the one home of the comparison rules the snapshot test uses.

Used to check that a refactoring keeps the numbers the chapters produce:

    python scripts/glue_snapshot.py --profile smoke --out before.json
    ... change things ...
    python scripts/glue_snapshot.py --profile smoke --out after.json --compare before.json

``--compare`` applies the reviewed per-quantity tolerances (``tests/glue_tolerances.json``, made
by ``scripts/glue_tolerances.py`` from measured conditioning) unless ``--rtol`` is given.

The rules (:func:`differences`): a verdict status (``*_status``) must be equal exactly; a number
must agree within its tolerance, ``|a - b| <= rtol * max(|a|, |b|) + ATOL``; a name present on one
side only is a difference; timings (:data:`EXCLUDED`) are not compared.
"""
from __future__ import annotations

import argparse
import json
import math
import re
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: the reviewed per-quantity tolerances (``scripts/glue_tolerances.py`` writes it)
TOLERANCE_FILE = ROOT / "tests" / "glue_tolerances.json"
#: absolute tolerance for numbers that are zero up to rounding (an interval end of -7.4e-16, the
#: rounding of O(1) quantities it is computed from): 1e-12 is 1e4 ulps of an O(1) number
ATOL = 1e-12
#: names not compared at all: timings and wall-clock values (they measure the machine)
EXCLUDED = (r"_runtime_s$", r"_seconds$", r"_seconds_per_point$", r"_per_second$", r"_wall",
            r"_elapsed")


def glued_values(nb: dict) -> dict[str, object]:
    """Glued name -> value (float where it parses, else the text/plain repr) of an executed notebook
    (through ``tests/conftest.py``'s :func:`glued`, the one reader of glued outputs)."""
    sys.path.insert(0, str(ROOT / "tests"))
    from conftest import glued, payload

    out: dict[str, object] = {}
    for name, data in glued(nb).items():
        got = payload(data, ("text/plain",))
        if got is None:
            out[name] = "<" + ",".join(sorted(data)) + ">"
            continue
        try:
            out[name] = float(got[1])
        except ValueError:
            out[name] = got[1].strip("'\"")
    return out


def run(profile: str, chapters: list[Path]) -> dict[str, dict[str, object]]:
    """Execute ``chapters`` at ``profile`` on the CPU; ``{chapter stem: glued values}``."""
    import papermill as pm
    res = {}
    with tempfile.TemporaryDirectory() as tmp:
        for path in chapters:
            out = Path(tmp) / path.name
            pm.execute_notebook(str(path), str(out), parameters={"profile": profile, "device": "cpu"},
                                cwd=str(path.parent), kernel_name="python3", progress_bar=False)
            res[path.stem] = glued_values(json.loads(out.read_text()))
            print(f"{path.stem}: {len(res[path.stem])} glued values", flush=True)
    return res


def is_number(v: object) -> bool:
    """A glued number (not a status, text or figure)."""
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def excluded(name: str) -> bool:
    """Whether ``name`` is a timing, never compared."""
    return any(re.search(p, name) for p in EXCLUDED)


def same(a: float, b: float, rtol: float) -> bool:
    """``a`` and ``b`` agree within ``rtol`` relative plus :data:`ATOL`; NaN equals only NaN."""
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    if math.isinf(a) or math.isinf(b):
        return a == b
    return abs(a - b) <= rtol * max(abs(a), abs(b)) + ATOL


def tolerances(path: Path = TOLERANCE_FILE) -> tuple[float, dict[str, dict[str, float]]]:
    """``(floor, {chapter: {name: rtol}})`` of the reviewed tolerance file: names not listed get
    the floor."""
    got = json.loads(Path(path).read_text())
    return float(got["floor"]), {ch: {k: float(v["rtol"]) for k, v in names.items()}
                                 for ch, names in got["tolerances"].items()}


def differences(expected: dict[str, object], got: dict[str, object],
                rtol: dict[str, float] | float) -> list[str]:
    """What differs between a chapter's snapshot and its run: statuses exactly, numbers within
    their tolerance (``rtol``: one number, or ``{name: rtol}`` with key ``""`` the default);
    names present on one side only; timings (:data:`EXCLUDED`) aside."""
    def tol(k: str) -> float:
        return rtol if isinstance(rtol, float) else rtol.get(k, rtol[""])

    out = []
    for k in sorted(set(expected) | set(got)):
        if excluded(k):
            continue
        a, b = expected.get(k, "<absent>"), got.get(k, "<absent>")
        if k.endswith("_status"):
            if a != b:
                out.append(f"{k}: status {a!r} in the snapshot, {b!r} now")
        elif is_number(a) or is_number(b):
            if not (is_number(a) and is_number(b) and same(float(a), float(b), tol(k))):
                out.append(f"{k}: {a!r} in the snapshot, {b!r} now (rtol {tol(k):g})")
    return out


def compare(a: dict, b: dict, rtol: float | None = None) -> list[str]:
    """:func:`differences` of every chapter of two snapshots, with the reviewed tolerances
    (``rtol=None``) or one ``rtol`` for all."""
    if rtol is None:
        floor, per = tolerances()
    out = []
    for ch in sorted(set(a) | set(b)):
        tol = float(rtol) if rtol is not None else {"": floor, **per.get(ch, {})}
        out += [f"{ch}:{d}" for d in differences(a.get(ch, {}), b.get(ch, {}), tol)]
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--profile", default="smoke")
    ap.add_argument("--out", required=True)
    ap.add_argument("--compare", help="an earlier snapshot to compare with")
    ap.add_argument("--rtol", type=float, default=None,
                    help="one relative tolerance for every number (default: the reviewed ones)")
    ap.add_argument("chapters", nargs="*", help="chapter stems (default: all)")
    args = ap.parse_args()
    chapters = sorted((ROOT / "chapters").glob("*.ipynb"))
    if args.chapters:
        chapters = [p for p in chapters if any(p.stem.startswith(c) for c in args.chapters)]
    res = run(args.profile, chapters)
    Path(args.out).write_text(json.dumps(res, indent=1, sort_keys=True))
    if args.compare:
        diffs = compare(json.loads(Path(args.compare).read_text()), res, args.rtol)
        print("\n".join(diffs) if diffs else "all glued values equal within their tolerances")
        return 1 if diffs else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
