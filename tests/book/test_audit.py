"""Tests of ``stumplib.book.audit``: how the audited seeds agree, and the audit table."""
from __future__ import annotations

from pathlib import Path

import pytest

from stumplib.book import audit as A

ROOT = Path(__file__).resolve().parents[2]


def _audit(statuses, profile="quick"):
    return {"profile": profile, "commit": "abc123", "seeds": list(range(len(statuses))),
            "claims": {"sym_interior": {"status": statuses}}}


def test_seed_agreement_counts_the_most_common_status():
    a = A.seed_agreement("sym_interior", _audit(["holds"] * 5))
    assert a["text"] == "5/5" and a["agree"] and a["status"] == "holds"
    a = A.seed_agreement("sym_interior", _audit(["holds", "fails", "holds", "holds", None]))
    assert a["text"] == "3/4" and not a["agree"] and a["counts"] == {"holds": 3, "fails": 1}
    assert A.seed_agreement("sym_bayes", _audit(["holds"] * 5))["text"] == "not audited"


def test_a_seed_that_does_not_change_the_data_is_not_counted_as_agreement():
    """Issue 47, part 5: "5/5" only where the seed changes the data. Five seeds that give the same
    value and status say "none: deterministic", or "recorded sweep" for a claim the chapter reads
    from a committed store; values that differ keep the count, and so does one seed."""
    def audit(key, values, statuses=None):
        st = statuses or ["holds"] * len(values)
        return {"claims": {key: {"status": st, "value": values}}}

    assert A.seed_agreement("pop_scale", audit("pop_scale", [0.25] * 5))["text"] == (
        "none: deterministic")
    assert A.seed_agreement("informed_start", audit("informed_start", [0.002] * 5))["text"] == (
        "recorded sweep")
    assert A.seed_agreement("sym_interior", audit("sym_interior", [4.0, 4.01, 4.0, 4.0, 4.0])
                            )["text"] == "5/5"
    split = audit("pop_scale", [0.25] * 5, ["holds"] * 4 + ["undecided"])
    assert A.seed_agreement("pop_scale", split)["text"] == "4/5"
    assert A.seed_agreement("pop_scale", audit("pop_scale", [0.25]))["text"] == "1/1"


def test_seed_audit_summary_measures_agreement_and_coverage(tmp_path):
    import importlib.util
    import json

    spec = importlib.util.spec_from_file_location("seed_audit", ROOT / "scripts" / "seed_audit.py")
    S = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(S)
    # five seeds: values 1..5 (SD 1.58), intervals +-0.31: coverage 0.31 / (1.96 x 1.58) = 0.1
    per = [{"status": st, "value": v, "lo": v - 0.31, "hi": v + 0.31, "number": "x_estimate"}
           for st, v in zip(["holds", "holds", "fails", "holds", "holds"], [1, 2, 3, 4, 5.0])]
    a = S.summarise(per)
    assert a["agreement"] == "4/5" and a["summary"] == "holds at 4 of 5 seeds"
    assert a["sd"] == pytest.approx(1.5811, abs=1e-4)
    assert a["coverage_ratio"] == pytest.approx(0.31 / (1.96 * 1.5811), rel=1e-3)
    assert a["intervals_holding_mean"] == 1  # only the seed at 3 holds the mean 3
    # a rerun of one chapter replaces that chapter's claims and is recorded
    base = {"profile": "quick", "seeds": [0, 1], "claims": {"sym_interior": {"status": ["x"]},
            "pop_scale": {"status": ["holds"]}}, "chapters_done": ["chapters/02_population_dynamics",
            "chapters/05_boundary_symmetrization"], "chapter_seconds": {}, "command": "c",
            "commit": "a", "machine": "m", "started": "s", "duration_s": 1.0}
    rerun = dict(base, claims={"sym_interior": {"status": ["holds", "holds"]}},
                 chapters_done=["chapters/05_boundary_symmetrization"], commit="b",
                 chapter_seconds={"chapters/05_boundary_symmetrization": 2.0})
    (tmp_path / "a.json").write_text(json.dumps(base))
    (tmp_path / "b.json").write_text(json.dumps(rerun))
    out = S.merge(tmp_path / "a.json", tmp_path / "b.json")
    assert out["claims"]["sym_interior"]["status"] == ["holds", "holds"]
    assert out["claims"]["pop_scale"]["status"] == ["holds"] and out["reruns"][0]["commit"] == "b"
    assert "rerun of chapters/05" in (tmp_path / "a.md").read_text()



def test_seed_audit_runs_a_chapters_section_page_as_a_task_of_its_own():
    """``--chapters 05`` names chapter 5 and its section page 5.1 (``05_two_heads``), each its own
    task with its own id; a longer tag names one notebook."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("seed_audit", ROOT / "scripts" / "seed_audit.py")
    S = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(S)
    five = [p.stem for p in S.chapter_notebooks("05")]
    assert five == ["05_boundary_symmetrization", "05_two_heads"]
    assert [p.stem for p in S.chapter_notebooks("05_two")] == ["05_two_heads"]
    ids = [S.task_id(f"chapters/{stem}", 2) for stem in five]
    assert ids == ["ch05_seed2", "ch05_two_heads_seed2"]
    with pytest.raises(SystemExit, match="matches 2 notebooks"):
        S.chapter_path("05")
