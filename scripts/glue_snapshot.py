"""Execute every chapter at a profile under papermill and write its glued values to JSON.

Used to check that a refactoring keeps the numbers the chapters produce:

    python scripts/glue_snapshot.py --profile smoke --out before.json
    ... change things ...
    python scripts/glue_snapshot.py --profile smoke --out after.json --compare before.json
"""
from __future__ import annotations

import argparse
import json
import math
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


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


def compare(a: dict, b: dict, rtol: float) -> list[str]:
    diffs = []
    for ch in sorted(set(a) | set(b)):
        ga, gb = a.get(ch, {}), b.get(ch, {})
        for k in sorted(set(ga) | set(gb)):
            va, vb = ga.get(k), gb.get(k)
            if isinstance(va, float) and isinstance(vb, float):
                same = va == vb or (math.isnan(va) and math.isnan(vb)) or abs(va - vb) <= rtol * max(abs(va), abs(vb), 1e-300)
            else:
                same = va == vb
            if not same:
                diffs.append(f"{ch}:{k}: {va!r} -> {vb!r}")
    return diffs


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--profile", default="smoke")
    ap.add_argument("--out", required=True)
    ap.add_argument("--compare", help="an earlier snapshot to compare with")
    ap.add_argument("--rtol", type=float, default=1e-6)
    ap.add_argument("chapters", nargs="*", help="chapter stems (default: all)")
    args = ap.parse_args()
    chapters = sorted((ROOT / "chapters").glob("*.ipynb"))
    if args.chapters:
        chapters = [p for p in chapters if any(p.stem.startswith(c) for c in args.chapters)]
    res = run(args.profile, chapters)
    Path(args.out).write_text(json.dumps(res, indent=1, sort_keys=True))
    if args.compare:
        diffs = compare(json.loads(Path(args.compare).read_text()), res, args.rtol)
        print("\n".join(diffs) if diffs else f"all glued values equal to rtol {args.rtol}")
        return 1 if diffs else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
