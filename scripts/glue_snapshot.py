"""Execute every chapter at a profile under papermill, write its glued values to JSON, and compare
two such snapshots: the one home of the comparison rules the snapshot test uses.

Used to check that a refactoring keeps the numbers the chapters produce:

    python scripts/glue_snapshot.py --profile smoke --out before.json
    ... change things ...
    python scripts/glue_snapshot.py --profile smoke --out after.json --compare before.json
    python scripts/glue_snapshot.py --explain before.json      # every number's kind and tolerance

**Tolerances come from what each number means**, never from one machine's spread
(:func:`tolerance`, read from the reviewed snapshot's own values). Each glued value has one kind:

- ``status`` (``*_status``): equal exactly; except that a claim whose statistic lies within its own
  tolerance of its rule's threshold (:func:`near_threshold`, thresholds from
  :data:`stumplib.book.registry.RULE_ARGS`) is *reported by name* instead of failing: such a status
  is decided by rounding, not by the data;
- ``interval``: an estimate ``X`` glued with its interval ``X_lo``, ``X_hi`` (the estimate, both
  ends and ``X_ci_width``): within :data:`INTERVAL_FRACTION` of the interval's half-width;
- ``standard error``: a mean glued with its standard error (``X_se``, or ``X_mean_K`` with
  ``X_se_K``): within :data:`INTERVAL_FRACTION` of that standard error;
- ``z-score``: a z-score's own standard error is 1, so within :data:`INTERVAL_FRACTION` absolute;
- ``count``: an integer (a count, a grid size, a parameter echoed back): equal up to :data:`ATOL`;
- ``deterministic``: any other number is the result of a float64 pipeline computed to a stated
  tolerance; it must agree within :data:`COMPUTED_MULTIPLE` times :data:`COMPUTED_TO` relative.

Timings (:data:`EXCLUDED`) and text are not compared. A name present on one side only is a
difference.
"""
from __future__ import annotations

import argparse
import json
import math
import re
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: absolute tolerance for numbers that are zero up to rounding (an interval end of -7.4e-16, the
#: rounding of O(1) quantities it is computed from): 1e-12 is 1e4 ulps of an O(1) number
ATOL = 1e-12
#: an estimate may move by this fraction of its own uncertainty (interval half-width, standard
#: error) between machines: 2% of the uncertainty is far below anything a reader could see in the
#: interval, and far above the rounding of a float64 pipeline (the two numbers that differed
#: between machines moved by 3e-5 and 5e-7 of their half-widths)
INTERVAL_FRACTION = 0.02
#: the tolerance the book's deterministic float64 pipelines are computed to: the loosest of the
#: tolerances their solvers are run at that still feed an interval-less glued number (the
#: population flow's ODE, ``stumplib.stump.flow.integrate_flow``: BDF with ``rtol`` 1e-7; L-BFGS
#: stops at ``gtol`` 1e-8, the held theory at ``tol`` 1e-10, fixed-seed training and Monte Carlo
#: in float64 carry rounding only)
COMPUTED_TO = 1e-7
#: a deterministic result may move by this many times :data:`COMPUTED_TO` (relative)
COMPUTED_MULTIPLE = 10.0
#: names not compared at all: timings and wall-clock values (they measure the machine)
EXCLUDED = (r"_runtime_s$", r"_seconds$", r"_seconds_per_point$", r"_per_second$", r"_wall",
            r"_elapsed", r"_minutes", r"_hours$", r"_objective_ms")
_Z = re.compile(r"(^|_)z(_|$)")


@dataclass(frozen=True)
class Tolerance:
    """How far one glued number may move: ``|a - b| <= atol + rtol max(|a|, |b|)``.

    Attributes
    ----------
    kind : ``"status"``, ``"interval"``, ``"standard error"``, ``"z-score"``, ``"count"``,
        ``"deterministic"`` or ``"given"`` (one ``rtol`` for every number).
    atol, rtol : the absolute and relative parts.
    why : where the tolerance comes from, with its source names.
    """

    kind: str
    atol: float
    rtol: float
    why: str

    def allows(self, a: float, b: float) -> bool:
        """Whether ``a`` and ``b`` agree; NaN equals only NaN, an infinity only itself."""
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        if math.isinf(a) or math.isinf(b):
            return a == b
        return abs(a - b) <= self.atol + self.rtol * max(abs(a), abs(b))

    def __str__(self) -> str:
        return f"{self.kind}: {self.why}"


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


def _num(v: object) -> float | None:
    return float(v) if is_number(v) and math.isfinite(float(v)) else None


def _group(name: str) -> str:
    """The estimate an interval end or width belongs to (``X_lo``, ``X_hi``, ``X_ci_width``: X)."""
    for suffix in ("_lo", "_hi", "_ci_width"):
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name


def _standard_error(name: str, values: dict[str, object]) -> tuple[str, float] | None:
    """The standard error glued beside ``name`` (``X_se``, ``X_mean_K`` -> ``X_se_K``)."""
    for se in (f"{name}_se", re.sub(r"_mean(_|$)", r"_se\1", name)):
        v = _num(values.get(se))
        if se != name and v is not None and v > 0:
            return se, v
    return None


def tolerance(name: str, values: dict[str, object]) -> Tolerance:
    """The tolerance of glued number ``name`` of a chapter whose reviewed values are ``values``
    (the module docstring's kinds, tried in that order).

    Parameters
    ----------
    name : str
        A glued name of the chapter.
    values : dict
        The chapter's reviewed snapshot, ``{glue name: value}``: the number's interval or standard
        error is read there, never from the run under test.

    Returns
    -------
    Tolerance
    """
    if name.endswith("_status"):
        return Tolerance("status", 0.0, 0.0, "equal exactly (near a threshold: reported)")
    g = _group(name)
    lo, hi = _num(values.get(f"{g}_lo")), _num(values.get(f"{g}_hi"))
    if lo is not None and hi is not None and hi != lo:
        half = abs(hi - lo) / 2
        return Tolerance("interval", INTERVAL_FRACTION * half, 0.0,
                         f"{INTERVAL_FRACTION:g} x the half-width {half:.3g} of [{g}_lo, {g}_hi]")
    se = _standard_error(name, values)
    if se is not None:
        return Tolerance("standard error", INTERVAL_FRACTION * se[1], 0.0,
                         f"{INTERVAL_FRACTION:g} x its standard error {se[0]} = {se[1]:.3g}")
    if _Z.search(name):
        return Tolerance("z-score", INTERVAL_FRACTION, 0.0,
                         f"{INTERVAL_FRACTION:g}: a z-score's standard error is 1")
    v = _num(values.get(name))
    if v is not None and v.is_integer() and abs(v) < 2 ** 53:
        return Tolerance("count", ATOL, 0.0, "an integer: equal")
    return Tolerance("deterministic", ATOL, COMPUTED_MULTIPLE * COMPUTED_TO,
                     f"{COMPUTED_MULTIPLE:g} x the pipelines' computed tolerance {COMPUTED_TO:g}")


def _thresholds(key: str) -> list[float]:
    """The values at which claim ``key``'s rule changes its word: its bound, its target and the
    target's tolerance band, from the registry (``[]`` for a name not in the registry)."""
    sys.path.insert(0, str(ROOT))
    from stumplib.book.registry import RULE_ARGS

    args = RULE_ARGS.get(key, {})
    out = [float(args[k]) for k in ("bound", "target", "exponent") if k in args]
    if "target" in args and "tol" in args:
        out += [float(args["target"]) - float(args["tol"]), float(args["target"]) + float(args["tol"])]
    return out


def near_threshold(status: str, expected: dict[str, object], got: dict[str, object]) -> str | None:
    """Why a differing ``<key>_status`` (or ``<key>_rule_status``) is decided by rounding, or None.

    The claim's statistic (``<key>_estimate`` and its ``_lo``, ``_hi``) in the snapshot or in the
    run lies within its own tolerance (:func:`tolerance`) of one of the rule's thresholds.
    """
    key = re.sub(r"(_rule)?_status$", "", status)
    for t in _thresholds(key):
        for n in (f"{key}_estimate", f"{key}_estimate_lo", f"{key}_estimate_hi"):
            tol = tolerance(n, expected)
            for side in (expected, got):
                v = _num(side.get(n))
                if v is not None and tol.allows(v, t):
                    return f"{n} = {v:.6g} lies within its tolerance ({tol.why}) of the threshold {t:g}"
    return None


def differences(expected: dict[str, object], got: dict[str, object],
                rtol: float | None = None, *, reported: list[str] | None = None) -> list[str]:
    """What differs between a chapter's reviewed snapshot ``expected`` and its run ``got``.

    Parameters
    ----------
    expected, got : dict
        ``{glue name: value}`` of the snapshot and of the run.
    rtol : float or None
        ``None``: each number's own :func:`tolerance`; a float: that relative tolerance for every
        number (statuses still exact).
    reported : list or None
        Where statuses decided by rounding (:func:`near_threshold`) are appended instead of being
        returned as differences.

    Returns
    -------
    list of str
        One line per difference, naming the value, both sides and the tolerance's source.
    """
    out = []
    for k in sorted(set(expected) | set(got)):
        if excluded(k):
            continue
        a, b = expected.get(k, "<absent>"), got.get(k, "<absent>")
        if k.endswith("_status"):
            if a != b:
                why = near_threshold(k, expected, got) if k in expected and k in got else None
                line = f"{k}: status {a!r} in the snapshot, {b!r} now"
                if why is not None and reported is not None:
                    reported.append(f"{line}: {why}")
                else:
                    out.append(line)
        elif is_number(a) or is_number(b):
            tol = (tolerance(k, expected) if rtol is None
                   else Tolerance("given", ATOL, float(rtol), f"rtol {rtol:g} for every number"))
            if not (is_number(a) and is_number(b) and tol.allows(float(a), float(b))):
                out.append(f"{k}: {a!r} in the snapshot, {b!r} now ({tol})")
    return out


def compare(a: dict, b: dict, rtol: float | None = None,
            reported: list[str] | None = None) -> list[str]:
    """:func:`differences` of every chapter of two snapshots ``{chapter: {name: value}}``, ``a``
    the reviewed one."""
    out = []
    for ch in sorted(set(a) | set(b)):
        out += [f"{ch}:{d}" for d in differences(a.get(ch, {}), b.get(ch, {}), rtol,
                                                 reported=reported)]
    return out


def explain(snapshot: dict) -> list[str]:
    """One line per compared value of a snapshot: chapter, name, kind and tolerance's source."""
    return [f"{ch}:{k}: {tolerance(k, v)}" for ch, v in sorted(snapshot.items())
            for k in sorted(v) if not excluded(k) and (is_number(v[k]) or k.endswith("_status"))]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--profile", default="smoke")
    ap.add_argument("--out", help="where to write the snapshot of this run")
    ap.add_argument("--compare", help="an earlier (reviewed) snapshot to compare with")
    ap.add_argument("--rtol", type=float, default=None,
                    help="one relative tolerance for every number (default: each number's own)")
    ap.add_argument("--explain", metavar="SNAPSHOT",
                    help="print every value's kind and tolerance in SNAPSHOT, run nothing")
    ap.add_argument("chapters", nargs="*", help="chapter stems (default: all)")
    args = ap.parse_args()
    if args.explain:
        print("\n".join(explain(json.loads(Path(args.explain).read_text()))))
        return 0
    if not args.out:
        ap.error("--out is required unless --explain is given")
    chapters = sorted((ROOT / "chapters").glob("*.ipynb"))
    if args.chapters:
        chapters = [p for p in chapters if any(p.stem.startswith(c) for c in args.chapters)]
    res = run(args.profile, chapters)
    Path(args.out).write_text(json.dumps(res, indent=1, sort_keys=True))
    if args.compare:
        reported: list[str] = []
        diffs = compare(json.loads(Path(args.compare).read_text()), res, args.rtol, reported)
        print("\n".join(f"decided by rounding (not a failure): {r}" for r in reported))
        print("\n".join(diffs) if diffs else "all glued values equal within their tolerances")
        return 1 if diffs else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
