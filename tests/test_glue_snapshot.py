"""The smoke chapters' glued statuses and numbers against the reviewed snapshot.

``scripts/glue_smoke_baseline.json`` holds every chapter's glued values at the ``smoke`` profile
(``{chapter stem: {glue name: value}}``). This test reads the chapters executed once by the shared
smoke fixture (``executed_chapter`` in ``conftest.py``: no extra chapter runs) and fails when

- a verdict status (``*_status``) differs from the snapshot, or appears or disappears: exactly
  equal, no tolerance;
- a glued number differs from the snapshot by more than its tolerance, or a number appears or
  disappears; timings and wall-clock values are not compared. **Each tolerance is derived from the
  quantity's own conditioning** (``tests/glue_tolerances.json``, written by
  ``scripts/glue_tolerances.py``): the chapters are executed under the kernels of three instruction
  sets (AVX-512, AVX2, x86-64-v2) and two thread counts on one machine; a number's spread is the
  largest relative difference between those runs and the snapshot (made on another machine), its
  tolerance ten times that spread, at least 1e-6; one number glued under several names shares one
  tolerance. The rules themselves (``|a - b| <= rtol max(|a|, |b|) + 1e-12``) live in
  ``scripts/glue_snapshot.py``;
- a number the landing page (``intro.md``) shows is NaN or a placeholder (``""``, ``"nan"``,
  ``"None"``, ``"?"``), whatever the snapshot holds; the only exceptions are the numbers the smoke
  profile does not compute (:data:`NOT_AT_SMOKE`, each with its reason, checked to be still NaN).

Other text (verdict sentences, labels) and figures are not compared: the statuses and the numbers
behind them are.

**Regenerating the snapshot is a reviewed step.** When a change moves a number or flips a status
on purpose, regenerate it with

    python scripts/glue_snapshot.py --profile smoke --out scripts/glue_smoke_baseline.json

then regenerate the tolerances (``python scripts/glue_tolerances.py --runs /tmp/glue_runs``), and
commit the two files alone, with a one-line reason in the commit message saying which values moved
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

#: the reviewed per-quantity tolerances, derived from each number's measured conditioning by
#: ``scripts/glue_tolerances.py`` (its docstring states the method): ``{"floor", "margin",
#: "tolerances": {chapter: {name: {"rtol", "spread", "aliases"}}}, "measured_margins", ...}``
TOLERANCE_FILE = ROOT / "tests" / "glue_tolerances.json"
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


def _snapshot_module():
    """``scripts/glue_snapshot.py``: the one home of the reader and of the comparison rules."""
    spec = importlib.util.spec_from_file_location("glue_snapshot", ROOT / "scripts" / "glue_snapshot.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _glued_values(nb: dict) -> dict[str, object]:
    return _snapshot_module().glued_values(nb)


def _is_number(v: object) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def chapter_tolerances(stem: str) -> dict[str, float]:
    """``{name: rtol}`` of one chapter, key ``""`` the floor (every name not listed)."""
    floor, per = _snapshot_module().tolerances(TOLERANCE_FILE)
    return {"": floor, **per.get(stem, {})}


def differences(expected: dict[str, object], got: dict[str, object],
                rtol: dict[str, float] | float) -> list[str]:
    """:func:`glue_snapshot.differences`: statuses exactly, numbers within their tolerance."""
    return _snapshot_module().differences(expected, got, rtol)


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
    diffs = differences(snapshot[path.stem], got, chapter_tolerances(path.stem))
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
    a placeholder are each found; a timing and a difference within tolerance are not; a
    per-name tolerance applies to its name only."""
    base = {"a_status": "holds", "x": 1.0, "y": float("nan"), "ch_runtime_s": 3.0, "z": 2.0,
            "t": "text"}
    tol = {"": 1e-6}
    same = dict(base, x=1.0 + 1e-9, ch_runtime_s=9.0, t="other text")
    assert differences(base, same, tol) == []
    assert differences(base, dict(base, a_status="fails"), tol)[0].startswith("a_status: status")
    assert differences(base, dict(base, x=1.0 + 1e-5), tol)[0].startswith("x: 1.0")
    assert differences(base, dict(base, x=1.0 + 1e-5), {"": 1e-6, "x": 2e-5}) == []
    assert differences(base, dict(base, z=2.0 + 2e-5), {"": 1e-6, "x": 2e-5}) != []
    assert differences(base, dict(base, y=0.5), tol)[0].startswith("y:")
    assert differences(base, {k: v for k, v in base.items() if k != "z"}, tol) == [
        "z: 2.0 in the snapshot, '<absent>' now (rtol 1e-06)"]
    assert differences(base, dict(base, b_status="holds"), tol) == [
        "b_status: status '<absent>' in the snapshot, 'holds' now"]
    assert differences({"e": -7.8e-16}, {"e": -7.4e-16}, tol) == []  # zero up to rounding
    assert all(_placeholder(v) for v in (float("nan"), "", "nan", "None", "?"))
    assert not any(_placeholder(v) for v in (0.0, -1.5, float("inf"), "holds"))
    assert intro_numbers(), "the landing page shows glued numbers"


def test_tolerances_are_derived_from_the_measured_spread_and_shared_by_aliases():
    """The committed tolerance file against its own method: every listed name is a number of the
    snapshot, its tolerance is ``max(floor, margin x spread)`` or an alias's larger one, aliases
    are symmetric, hold equal values in the snapshot and share one tolerance; the measured runs
    passed the test's rules with room (largest fraction of tolerance below 1) and no status or
    NaN differed between instruction sets."""
    rec = json.loads(TOLERANCE_FILE.read_text())
    snapshot = json.loads(BASELINE.read_text())
    floor, margin = rec["floor"], rec["margin"]
    assert margin >= 2 and 0 < floor <= 1e-5 and set(rec["settings"]) >= {
        "native_1thread", "avx2_1thread", "x86v2_1thread"}
    assert not rec["unstable"], rec["unstable"]
    for setting, m in rec["measured_margins"].items():
        assert m["differences_under_the_test_rules"] == 0, setting
        assert m["largest_fraction_of_tolerance"] < 1, (setting, m)
    for ch, names in rec["tolerances"].items():
        for k, t in names.items():
            assert _is_number(snapshot[ch].get(k)), f"{ch}:{k} is not a number of the snapshot"
            own = max(floor, margin * t["spread"])
            assert t["rtol"] >= own * (1 - 1e-12), (ch, k)
            group = [k] + t.get("aliases", [])
            for a in t.get("aliases", []):
                assert k in names[a]["aliases"], f"{ch}: alias {a} of {k} not symmetric"
                assert names[a]["rtol"] == t["rtol"], f"{ch}: aliases {k}, {a} differ"
                assert snapshot[ch][a] == snapshot[ch][k], f"{ch}: aliases {k}, {a} differ in value"
            assert t["rtol"] == max(max(floor, margin * names[g]["spread"]) for g in group), (ch, k)
