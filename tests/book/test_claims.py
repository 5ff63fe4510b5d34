"""stumplib.book.claims: the registry covers the landing page, names real rules, and decides."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from stumplib.book import audit as A
from stumplib.book import claims as K
from stumplib.book import registry as R
from stumplib.book import runs
from stumplib.book import verdicts as V
from stumplib.core.stats import Estimate

ROOT = Path(__file__).resolve().parents[2]


def est(v, lo, hi):
    return Estimate(v, lo, hi, "bootstrap")


def landing_rows() -> list[tuple[str, str]]:
    """``(chapter, key)`` of every ``<key>_status`` glued into intro.md's tables."""
    text = (ROOT / "intro.md").read_text()
    return re.findall(r"\{glue:text\}`(chapters/[^`:]+)\.ipynb::(\w+)_status(?::s)?`", text)


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
    for c in R.REGISTRY:
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


def _audit(statuses, profile="quick"):
    return {"profile": profile, "commit": "abc123", "seeds": list(range(len(statuses))),
            "claims": {"sym_interior": {"status": statuses}}}


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
    rows = R.registry_rows()
    assert len(rows) == len(R.REGISTRY) and all(len(r) == len(R.RULE_HEADER) for r in rows)
    audit = _audit(["holds", "fails", "holds"])
    audit["claims"]["sym_interior"].update(mean=4.1, sd=0.05, half_width=0.1,
                                           coverage_ratio=1.02)
    rows = {r[0]: r for r in A.audit_rows(audit)}
    row = rows[R.claim("sym_interior").claim]
    assert row[1] == "holds, fails, holds" and row[2] == "2/3" and row[6] == "1.02"
    assert rows[R.claim("sym_bayes").claim][1] == "not audited"
    same = _audit(["holds"] * 5)
    assert {r[0]: r for r in A.audit_rows(same)}[R.claim("sym_interior").claim][1] == \
        "holds at all 5"
    # with five seeds' values the ratio is judged against what nominal intervals give (0.60-2.87)
    audit["claims"]["sym_interior"].update(value=[4.0, 4.1, 4.2, 4.1, 4.0])
    for ratio, shown in ((0.3, "0.30 under-covers"), (1.5, "1.50"), (4.0, "4.00 wide")):
        audit["claims"]["sym_interior"]["coverage_ratio"] = ratio
        row = {r[0]: r for r in A.audit_rows(audit)}[R.claim("sym_interior").claim]
        assert row[6] == shown
    assert runs.read_audit(ROOT / "no_such_file.json") == {}


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
    for c in R.REGISTRY:
        chapter = c.chapter.removeprefix("chapters/")
        assert c.key_number in glued[chapter], f"{c.key}: {c.key_number} is not glued"
        shown = re.search(rf"::{c.key_number}(_text|_lo|_hi)?:", rows[c.key])  # _text: typeset
        assert shown, f"{c.key}: the row does not show {c.key_number}"
        assert f"::{c.key}_seed_agreement:s`" in rows[c.key], f"{c.key}: no seed agreement"


def test_a_failed_seed_counts_in_the_seed_agreement():
    audit = {"profile": "quick", "claims": {"sym_interior": {
        "status": ["holds", "holds", None, "holds", "holds"], "failed": 1}}}
    a = A.seed_agreement("sym_interior", audit)
    assert a["text"] == "4/5, 1 failed" and not a["agree"] and a["counts"] == {"holds": 4, "failed": 1}
    v = V.Verdict("holds", "the interior improves.")
    got = K.check("sym_interior", v, profile="quick", audit=audit, glue=False)
    assert got.status == "undecided" and "holds at 4, failed at 1" in got.sentence
    all_failed = {"claims": {"sym_interior": {"status": [None, None], "failed": 2}}}
    assert A.seed_agreement("sym_interior", all_failed)["text"] == "0/2, 2 failed"


def test_the_audit_code_line_says_plainly_when_the_codes_differ():
    same = A.audit_code_line({"code_version": "abc"}, built="abc")
    assert same.startswith("Audited code: abc; built code: abc.") and "differ" not in same
    other = A.audit_code_line({"code_version": "abc"}, built="def")
    assert other.startswith("Audited code: abc; built code: def.") and "They differ" in other
    old = A.audit_code_line({"commit": "x"}, built="def")
    assert "Audited code: not recorded; built code: def." in old and "rerun scripts/seed_audit.py" in old
    rerun = A.audit_code_line({"code_version": "abc", "reruns": [{"code_version": "fff"}]}, built="abc")
    assert "rerun at code fff" in rerun and "They differ" in rerun
    # the judging page shows the line the build record glues, computed at build time
    assert "{glue:text}`build_record.ipynb::audit_code_line:s`" in (ROOT / "judging.md").read_text()
    assert 'book.glue_value("audit_code_line", audit.audit_code_line(' in \
        (ROOT / "build_record.ipynb").read_text().replace('\\"', '"')
