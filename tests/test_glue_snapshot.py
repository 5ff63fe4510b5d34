"""The smoke chapters' glued statuses and numbers against the reviewed snapshot.

``scripts/glue_smoke_baseline.json`` holds every chapter's glued values at the ``smoke`` profile
(``{chapter stem: {glue name: value}}``). This test reads the chapters executed once by the shared
smoke fixture (``executed_chapter`` in ``conftest.py``: no extra chapter runs) and fails when

- a verdict status (``*_status``) differs from the snapshot, or appears or disappears: exactly
  equal, no tolerance;
- a glued number differs from the snapshot by more than its tolerance (:data:`TOLERANCES`, default
  :data:`RTOL` relative plus :data:`ATOL` absolute), or a number appears or disappears; numbers
  whose name matches :data:`EXCLUDED` (timings and wall-clock values) are not compared;
- a number the landing page (``intro.md``) shows is NaN or a placeholder (``""``, ``"nan"``,
  ``"None"``, ``"?"``), whatever the snapshot holds; the only exceptions are the numbers the smoke
  profile does not compute (:data:`NOT_AT_SMOKE`, each with its reason, checked to be still NaN).

Other text (verdict sentences, labels) and figures are not compared: the statuses and the numbers
behind them are.

**Regenerating the snapshot is a reviewed step.** When a change moves a number or flips a status
on purpose, regenerate it with

    python scripts/glue_snapshot.py --profile smoke --out scripts/glue_smoke_baseline.json

and commit the file alone, with a one-line reason in the commit message saying which values moved
and why (``git log -- scripts/glue_smoke_baseline.json`` is then the history of reviewed changes).
"""
from __future__ import annotations

import importlib.util
import json
import math
import re

import pytest

from conftest import CHAPTERS, ROOT

BASELINE = ROOT / "scripts" / "glue_smoke_baseline.json"

#: default relative tolerance: the chapters are deterministic (same seed, same numbers); between
#: two sessions' smoke runs of chapter 4 the numbers not listed in :data:`TOLERANCES` differed by
#: at most 3e-13 relative (summation order), 3e6 times below this
RTOL = 1e-6
#: absolute tolerance for numbers that are zero up to rounding (e.g. an interval end of -7.8e-16,
#: the rounding of O(1) quantities it is computed from): 1e-12 is 1e4 ulps of an O(1) number
ATOL = 1e-12
#: per-quantity tolerances ``{regex: (rtol, reason)}`` where the default does not apply
TOLERANCES: dict[str, tuple[float, str]] = {
    r"^(head_(p|q|coef_beta|coef_N)|frozen_slope_(mn|N|mn_diag))(_lo|_hi)?$": (
        1e-5, "chapter 4's two-term law (frozen.fit_two_term): scipy's least_squares stops at its "
              "default xtol 1e-8 on (log A, p, log B, q), so rounding-level changes of the data move "
              "the fit by ~1e-8 |log A| relative; measured 3.6e-7 between two sessions (head_coef_N_lo)"),
}
#: names not compared at all: timings and wall-clock values (they measure the machine)
EXCLUDED = (r"_runtime_s$", r"_seconds$", r"_seconds_per_point$", r"_per_second$", r"_wall",
            r"_elapsed")
#: what a glued number must never be on the landing page
PLACEHOLDERS = ("", "nan", "none", "?", "-", "null")
#: landing-page numbers that the smoke profile does not compute (the chapter glues NaN there by
#: design; the quick and full profiles compute them): ``{chapter: {name: reason}}``. The test
#: asserts they are still NaN at smoke, so an entry goes stale loudly once smoke computes it.
NOT_AT_SMOKE: dict[str, dict[str, str]] = {
    "06_positional_semantic": {
        f"phase_diagram_alpha_c_{w}": "the smoke diagram solves omega = 0.3 only (chapter 6's "
                                      "SETTINGS['smoke']['omegas']); quick solves 0.2, 0.3, 0.4"
        for w in ("w020", "w040")},
}

_INTRO_REF = re.compile(r"chapters/([\w.-]+)\.ipynb::(\w+):([^`]*)`")


def _glued_values(nb: dict) -> dict[str, object]:
    spec = importlib.util.spec_from_file_location("glue_snapshot", ROOT / "scripts" / "glue_snapshot.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.glued_values(nb)


def _is_number(v: object) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _tolerance(name: str) -> float:
    for pattern, (rtol, _why) in TOLERANCES.items():
        if re.search(pattern, name):
            return rtol
    return RTOL


def _same(a: float, b: float, rtol: float) -> bool:
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    if math.isinf(a) or math.isinf(b):
        return a == b
    return abs(a - b) <= rtol * max(abs(a), abs(b)) + ATOL


def differences(expected: dict[str, object], got: dict[str, object]) -> list[str]:
    """What differs between a chapter's snapshot and its run: statuses exactly, numbers within
    their tolerance (:data:`EXCLUDED` names aside); names present on one side only."""
    out = []
    for k in sorted(set(expected) | set(got)):
        if any(re.search(p, k) for p in EXCLUDED):
            continue
        a, b = expected.get(k, "<absent>"), got.get(k, "<absent>")
        if k.endswith("_status"):
            if a != b:
                out.append(f"{k}: status {a!r} in the snapshot, {b!r} now")
        elif _is_number(a) or _is_number(b):
            if not (_is_number(a) and _is_number(b) and _same(float(a), float(b), _tolerance(k))):
                out.append(f"{k}: {a!r} in the snapshot, {b!r} now (rtol {_tolerance(k):g})")
    return out


def intro_numbers() -> dict[str, list[str]]:
    """``{chapter stem: [glue names]}`` of the numbers the landing page shows (format not ``s``)."""
    out: dict[str, list[str]] = {}
    for stem, name, fmt in _INTRO_REF.findall((ROOT / "intro.md").read_text()):
        if not fmt.endswith("s"):
            out.setdefault(stem, []).append(name)
    return out


def _placeholder(v: object) -> bool:
    if _is_number(v):
        return not math.isfinite(float(v)) and not (math.isinf(float(v)))
    return str(v).strip().lower() in PLACEHOLDERS or str(v).strip().lower() == "nan"


@pytest.mark.slow
@pytest.mark.parametrize("path", CHAPTERS, ids=[p.stem for p in CHAPTERS])
def test_glued_statuses_and_numbers_match_the_reviewed_snapshot(path, executed_chapter):
    snapshot = json.loads(BASELINE.read_text())
    assert path.stem in snapshot, (f"{path.stem} is not in {BASELINE.name}: regenerate it "
                                   "(a reviewed step, see this module's docstring)")
    got = _glued_values(executed_chapter(path))
    diffs = differences(snapshot[path.stem], got)
    assert not diffs, (f"{path.stem} differs from the reviewed snapshot (regenerating it is a "
                       "reviewed step with a one-line reason):\n" + "\n".join(diffs))
    shown = intro_numbers().get(path.stem, [])
    excused = NOT_AT_SMOKE.get(path.stem, {})
    bad = [f"{k} = {got.get(k, '<absent>')!r}" for k in shown
           if k not in excused and _placeholder(got.get(k, ""))]
    assert not bad, f"numbers on the landing page that are NaN or a placeholder: {', '.join(bad)}"
    stale = [k for k in excused if not _placeholder(got.get(k, ""))]
    assert not stale, f"NOT_AT_SMOKE entries now computed at smoke (remove them): {stale}"


def test_the_comparison_catches_what_it_should():
    """The checker on synthetic snapshots: a flipped status, a moved number, a new or lost name and
    a placeholder are each found; a timing and a difference within tolerance are not."""
    base = {"a_status": "holds", "x": 1.0, "y": float("nan"), "ch_runtime_s": 3.0, "z": 2.0,
            "t": "text"}
    same = dict(base, x=1.0 + 1e-9, ch_runtime_s=9.0, t="other text")
    assert differences(base, same) == []
    assert differences(base, dict(base, a_status="fails"))[0].startswith("a_status: status")
    assert differences(base, dict(base, x=1.0 + 1e-5))[0].startswith("x: 1.0")
    assert differences(base, dict(base, y=0.5))[0].startswith("y:")
    assert differences(base, {k: v for k, v in base.items() if k != "z"}) == [
        "z: 2.0 in the snapshot, '<absent>' now (rtol 1e-06)"]
    assert differences(base, dict(base, b_status="holds")) == [
        "b_status: status '<absent>' in the snapshot, 'holds' now"]
    assert differences({"e": -7.8e-16}, {"e": -7.4e-16}) == []  # zero up to rounding
    assert all(_placeholder(v) for v in (float("nan"), "", "nan", "None", "?"))
    assert not any(_placeholder(v) for v in (0.0, -1.5, float("inf"), "holds"))
    assert intro_numbers(), "the landing page shows glued numbers"
