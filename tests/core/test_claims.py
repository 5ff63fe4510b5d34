"""stumplib.core.claims: the registry covers the landing page, names real rules, and decides."""
from __future__ import annotations

import inspect
import re
from pathlib import Path

import pytest

from stumplib.core import claims as K
from stumplib.core import verdicts as V
from stumplib.core.stats import Estimate

ROOT = Path(__file__).resolve().parents[2]


def est(v, lo, hi):
    return Estimate(v, lo, hi, "bootstrap")


def landing_rows() -> list[tuple[str, str]]:
    """``(chapter, key)`` of every ``<key>_status`` glued into intro.md's tables."""
    text = (ROOT / "intro.md").read_text()
    return re.findall(r"\{glue:text\}`(chapters/[^`:]+)\.ipynb::(\w+)_status(?::s)?`", text)


def test_the_registry_covers_every_landing_row():
    rows = landing_rows()
    assert len(rows) >= 20  # both dashboards
    for chapter, key in rows:
        c = K.claim(key)  # KeyError names the missing key
        assert c.chapter == chapter, f"{key}: registry says {c.chapter}, landing row {chapter}"
    assert len({k for _, k in rows}) == len(rows), "a claim appears twice on the landing page"


def test_every_claim_names_an_existing_verdict_function_and_states_its_rule():
    keys = [c.key for c in K.REGISTRY]
    assert len(keys) == len(set(keys))
    for c in K.REGISTRY:
        assert c.rule in V.__all__ and inspect.isfunction(getattr(V, c.rule)), c.key
        assert c.paper in ("stump", "phase") and (ROOT / f"{c.chapter}.ipynb").is_file(), c.key
        for field in (c.claim, c.statistic, c.target, c.tolerance):
            assert field.strip(), f"{c.key} leaves a field empty"
        # the registry's arguments are arguments of the named rule
        params = inspect.signature(getattr(V, c.rule)).parameters
        for name in K.rule_arguments(c.key):
            assert name in params or name in ("bound", "target"), (c.key, name)


def test_the_chapter_decision_and_two_head_rows_have_entries():
    assert K.claim("gd_theory").rule == "choose_theory"
    assert K.claim("two_head").chapter == "chapters/05_boundary_symmetrization"
    with pytest.raises(KeyError, match="no claim 'nope'"):
        K.claim("nope")


@pytest.mark.parametrize("key, e, status", [
    ("sym_interior", est(4.15, 4.1, 4.2), "holds"),       # 4 within the stated 0.2
    ("sym_interior", est(4.3, 4.25, 4.35), "fails"),      # 4.25 - 0.2 > 4
    ("onehead_boundary", est(20, 15, 25), "holds"),       # at least 10
    ("onehead_boundary", est(9, 5, 14), "undecided"),
    ("pop_scale", est(0.2505, 0.2504, 0.2506), "holds"),  # 1e-3 tolerance of the extrapolation
    ("pop_scale", est(0.2581, 0.2520, 0.2629), "fails"),  # a window fit is not the limit
    ("pop_scale", est(0.2664, 0.2401, 0.2681), "undecided"),  # wider than twice the tolerance
    ("sym_interior", est(4.0, 3.7, 4.3), "undecided"),    # width 0.6 > 2 x 0.2
])
def test_judge_applies_the_registry_target_and_tolerance(key, e, status):
    assert K.judge(key, e, symbol="x").status == status


def test_judge_runs_every_one_estimate_rule_and_refuses_a_chapter_tolerance():
    for c in K.REGISTRY:
        if c.rule not in ("at_least", "at_most", "against_target", "rate_up_to_logs",
                          "growth_up_to_logs"):
            with pytest.raises(ValueError, match="more than one estimate"):
                K.judge(c.key, est(1, 0, 2), symbol="x")
            continue
        ctx = (dict(x_mid=500.0, variable="x") if "logs" in c.rule else dict(symbol="x"))
        assert K.judge(c.key, est(1.0, 0.9, 1.1), **ctx).status in V.STATUSES
    with pytest.raises(ValueError, match="tol of claim 'sym_interior' come from the registry"):
        K.judge("sym_interior", est(4, 3.9, 4.1), symbol="r", tol=1.0)
    with pytest.raises(ValueError, match="must be an Estimate"):
        K.judge("sym_interior", 4.0, symbol="r")


def test_the_worst_case_bound_rules_are_the_log_rate_rules():
    # a slope of -0.90 [-1.00, -0.83] at m∧n ~ 362 holds; -0.50 [-0.55, -0.45] fails
    assert K.judge("bound_mn", est(-0.9, -1.0, -0.83), x_mid=362.0,
                   variable="m∧n").status == "holds"
    assert K.judge("bound_mn", est(-0.5, -0.55, -0.45), x_mid=362.0,
                   variable="m∧n").status == "fails"
    assert K.judge("certified_scale", est(0.9, 0.8, 1.0), x_mid=362.0,
                   variable="m∧n").status == "holds"
    assert K.judge("certified_scale", est(0.5, 0.45, 0.55), x_mid=362.0,
                   variable="m∧n").status == "fails"


def _audit(statuses, profile="quick"):
    return {"profile": profile, "commit": "abc123", "seeds": list(range(len(statuses))),
            "claims": {"sym_interior": {"status": statuses}}}


def test_seed_agreement_counts_the_most_common_status():
    a = K.seed_agreement("sym_interior", _audit(["holds"] * 5))
    assert a["text"] == "5/5" and a["agree"] and a["status"] == "holds"
    a = K.seed_agreement("sym_interior", _audit(["holds", "fails", "holds", "holds", None]))
    assert a["text"] == "3/4" and not a["agree"] and a["counts"] == {"holds": 3, "fails": 1}
    assert K.seed_agreement("sym_bayes", _audit(["holds"] * 5))["text"] == "not audited"


def test_a_claim_whose_seeds_disagree_is_undecided_with_the_counts():
    e = est(4.15, 4.1, 4.2)  # holds by the rule at this seed
    split = _audit(["holds", "holds", "fails", "holds", "holds"])
    v = K.decide("sym_interior", e, profile="quick", audit=split, glue=False, symbol="r")
    assert v.status == "undecided" and "holds at 4, fails at 1" in v.sentence
    # the audit of another profile, or a unanimous one, leaves the rule's verdict
    assert K.decide("sym_interior", e, profile="smoke", audit=split, glue=False,
                    symbol="r").status == "holds"
    assert K.decide("sym_interior", e, profile="quick", audit=_audit(["holds"] * 5),
                    glue=False, symbol="r").status == "holds"
    assert K.decide("sym_interior", e, profile="quick", audit={}, glue=False,
                    symbol="r").status == "holds"


def test_decide_parts_combines_the_parts_of_one_claim():
    v = K.decide_parts("head", {"p": est(1.0, 0.98, 1.02), "q": est(0.8, 0.78, 0.82)},
                       audit={}, glue=False)
    assert v.status == "partly" and "p = " in v.sentence and "q = " in v.sentence
    with pytest.raises(ValueError, match="at least one"):
        K.decide_parts("head", {}, audit={}, glue=False)


def test_page_tables_have_one_row_per_claim():
    rows = K.registry_rows()
    assert len(rows) == len(K.REGISTRY) and all(len(r) == len(K.RULE_HEADER) for r in rows)
    audit = _audit(["holds", "fails", "holds"])
    audit["claims"]["sym_interior"].update(mean=4.1, sd=0.05, half_width=0.1,
                                           coverage_ratio=1.02)
    rows = {r[0]: r for r in K.audit_rows(audit)}
    row = rows[K.claim("sym_interior").claim]
    assert row[1] == "holds, fails, holds" and row[2] == "2/3" and row[6] == "1.02"
    assert rows[K.claim("sym_bayes").claim][1] == "not audited"
    same = _audit(["holds"] * 5)
    assert {r[0]: r for r in K.audit_rows(same)}[K.claim("sym_interior").claim][1] == \
        "holds at all 5"
    # with five seeds' values the ratio is judged against what nominal intervals give (0.60-2.87)
    audit["claims"]["sym_interior"].update(value=[4.0, 4.1, 4.2, 4.1, 4.0])
    for ratio, shown in ((0.3, "0.30 under-covers"), (1.5, "1.50"), (4.0, "4.00 wide")):
        audit["claims"]["sym_interior"]["coverage_ratio"] = ratio
        row = {r[0]: r for r in K.audit_rows(audit)}[K.claim("sym_interior").claim]
        assert row[6] == shown
    assert K.read_audit(ROOT / "no_such_file.json") == {}


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


def test_check_seed_checks_a_verdict_from_a_library_function():
    v = V.Verdict("holds", "the semantic branch ends between alpha = 0.6 and 0.7.")
    split = {"profile": "quick", "claims": {"phase_semantic_end": {
        "status": ["undecided", "holds", "undecided", "undecided", "holds"]}}}
    got = K.check("phase_semantic_end", v, profile="quick", audit=split, glue=False)
    assert got.status == "undecided" and "undecided at 3, holds at 2" in got.sentence
    assert K.check("phase_semantic_end", v, profile="smoke", audit=split, glue=False) is v


def test_each_landing_row_shows_its_claims_key_number_and_seed_agreement():
    # the key number the registry names is glued by the chapter (smoke baseline) and is the
    # number the landing row shows; every row shows the seed audit's agreement
    import json

    glued = json.loads((ROOT / "scripts" / "glue_smoke_baseline.json").read_text())
    rows = {}
    for line in (ROOT / "intro.md").read_text().splitlines():
        m = re.search(r"::(\w+)_status(?::s)?`", line)
        if m:
            rows[m.group(1)] = line
    for c in K.REGISTRY:
        chapter = c.chapter.removeprefix("chapters/")
        assert c.key_number in glued[chapter], f"{c.key}: {c.key_number} is not glued"
        shown = re.search(rf"::{c.key_number}(_text|_lo|_hi)?:", rows[c.key])  # _text: typeset
        assert shown, f"{c.key}: the row does not show {c.key_number}"
        assert f"::{c.key}_seed_agreement:s`" in rows[c.key], f"{c.key}: no seed agreement"


def test_a_failed_seed_counts_in_the_seed_agreement():
    audit = {"profile": "quick", "claims": {"sym_interior": {
        "status": ["holds", "holds", None, "holds", "holds"], "failed": 1}}}
    a = K.seed_agreement("sym_interior", audit)
    assert a["text"] == "4/5, 1 failed" and not a["agree"] and a["counts"] == {"holds": 4, "failed": 1}
    v = V.Verdict("holds", "the interior improves.")
    got = K.check("sym_interior", v, profile="quick", audit=audit, glue=False)
    assert got.status == "undecided" and "holds at 4, failed at 1" in got.sentence
    all_failed = {"claims": {"sym_interior": {"status": [None, None], "failed": 2}}}
    assert K.seed_agreement("sym_interior", all_failed)["text"] == "0/2, 2 failed"


def test_the_audit_code_line_says_plainly_when_the_codes_differ():
    same = K.audit_code_line({"code_version": "abc"}, built="abc")
    assert same.startswith("Audited code: abc; built code: abc.") and "differ" not in same
    other = K.audit_code_line({"code_version": "abc"}, built="def")
    assert other.startswith("Audited code: abc; built code: def.") and "They differ" in other
    old = K.audit_code_line({"commit": "x"}, built="def")
    assert "Audited code: not recorded; built code: def." in old and "rerun scripts/seed_audit.py" in old
    rerun = K.audit_code_line({"code_version": "abc", "reruns": [{"code_version": "fff"}]}, built="abc")
    assert "rerun at code fff" in rerun and "They differ" in rerun
    # the judging page shows the line the build record glues, computed at build time
    assert "{glue:text}`build_record.ipynb::audit_code_line:s`" in (ROOT / "judging.md").read_text()
    assert 'book.glue_value("audit_code_line", claims.audit_code_line(' in \
        (ROOT / "build_record.ipynb").read_text().replace('\\"', '"')
