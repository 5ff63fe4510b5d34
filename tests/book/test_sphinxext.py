"""The build extension's stamp (``stumplib.book.sphinxext``) without a build: what it depends on and the
file it writes. (The extension inside real builds, pre-execution included: ``test_build_cache.py``.)"""
from __future__ import annotations

import json
from pathlib import Path

from stumplib import book
from stumplib.book.sphinxext import build_stamp, write_stamp


def test_stamp_follows_the_code_profile_and_cache_setting(monkeypatch):
    monkeypatch.delenv(book.ENV_VAR, raising=False)
    monkeypatch.delenv(book.CACHE_ENV, raising=False)
    base = build_stamp()
    assert base.pop("seed_audit")  # a hash of scripts/SEED_AUDIT.json, which the chapters read
    assert base == {"code_version": book.code_version(), "profile": "", "cache": "on"}
    monkeypatch.setenv(book.ENV_VAR, "full")
    assert build_stamp()["profile"] == "full"
    monkeypatch.setenv(book.CACHE_ENV, "0")
    assert build_stamp()["cache"] == "off"
    monkeypatch.setattr(book, "code_version", lambda: "f" * 16)
    assert build_stamp()["code_version"] == "f" * 16


def test_write_stamp_stores_this_process_stamp_next_to_the_cache(tmp_path):
    cache = tmp_path / "_build" / ".jupyter_cache"
    sf = write_stamp(cache)
    assert sf == tmp_path / "_build" / ".jupyter_cache.stamp.json"
    assert json.loads(sf.read_text()) == build_stamp()
    assert not list(sf.parent.glob("*.tmp"))


# ------------------------------------------------------------------ claims as data
import csv  # noqa: E402

from stumplib.book import compare, sphinxext  # noqa: E402
from stumplib.book.__main__ import main as book_main  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
from stumplib.book.registry import Claim  # noqa: E402


def _glue_output(name: str, value) -> dict:
    """A glue output as papermill/scrapbook records it in an executed notebook."""
    return {"output_type": "display_data", "metadata": {"scrapbook": {"name": name}},
            "data": {"application/papermill.record/text/plain": repr(value)}}


def _fake_executed(folder, chapter: str, glued: dict) -> None:
    nb = {"cells": [{"cell_type": "code", "source": "", "metadata": {},
                     "outputs": [_glue_output(k, v) for k, v in glued.items()]},
                    {"cell_type": "markdown", "source": "text", "metadata": {}}],
          "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    f = folder / f"{chapter}.ipynb"
    f.parent.mkdir(parents=True, exist_ok=True)
    f.write_text(json.dumps(nb))


REG = (Claim("head", "stump", "chapters/04_error_bound", "error² = β⁻² + 2N⁻²", "p, q", "1",
             "0.05", "against_target"),
       Claim("bound_mn", "stump", "chapters/04_error_bound", "(m∧n)⁻¹ rate", "slope", "-1",
             "logs", "rate_up_to_logs"),
       Claim("gone", "phase", "chapters/06_positional_semantic", "c", "s", "t", "tol", "located"))


def test_claims_export_reads_the_glued_values_and_leaves_missing_ones_empty(tmp_path):
    _fake_executed(tmp_path / "_executed", "chapters/04_error_bound", {
        "head_status": "holds", "head_verdict": "Holds: p = 0.99 [0.97, 1.01] against 1.",
        "head_estimate": 0.99, "head_estimate_lo": 0.97, "head_estimate_hi": 1.01,
        "head_seed_agreement": "3 of 3 seeds", "bound_mn_status": "undecided",
        "bound_mn_estimate": float("nan")})
    rows = sphinxext.claims_rows(tmp_path / "_executed", profile="smoke", code_version="abc",
                                 registry=REG)
    assert [r["key"] for r in rows] == ["head", "bound_mn", "gone"]
    head, bound, gone = rows
    assert (head["status"], head["estimate"], head["lower"], head["upper"]) == ("holds", 0.99, 0.97, 1.01)
    assert head["seed_agreement"] == "3 of 3 seeds" and head["profile"] == "smoke"
    assert head["code_version"] == "abc" and head["target"] == "1" and head["claim"].startswith("error²")
    assert bound["status"] == "undecided" and bound["estimate"] == "" and bound["lower"] == ""
    assert all(gone[k] == "" for k in ("status", "estimate", "lower", "upper", "seed_agreement"))
    js, cs = sphinxext.write_claims(rows, tmp_path / "site")
    data = json.loads(js.read_text(encoding="utf-8"))
    assert data["claims"] == rows and data["summary"] == sphinxext.claims_tally(rows)
    assert compare.load_claims(js) == rows
    with cs.open(encoding="utf-8") as f:
        table = list(csv.DictReader(f))
    assert list(table[0]) == list(sphinxext.CLAIM_FIELDS)
    assert table[0]["estimate"] == "0.99" and table[1]["estimate"] == "" and len(table) == 3


def test_the_tally_counts_the_separate_tests_and_names_its_numbers(tmp_path):
    """Four statuses counted over the claims that are separate tests; a consequence of other claims
    (``follows_from``) and a claim no chapter glued are reported apart; the sentence's numbers carry
    the ids the site test reads."""
    reg = REG + (Claim("bound_N", "stump", "chapters/04_error_bound", "N⁻¹ rate", "slope", "-1",
                       "logs", "rate_up_to_logs"),
                 Claim("cons", "stump", "chapters/04_error_bound", "c", "s", "t", "tol", "at_least",
                       follows_from=("head",)))
    _fake_executed(tmp_path, "chapters/04_error_bound", {
        "head_status": "holds", "bound_mn_status": "partly", "bound_N_status": "holds",
        "cons_status": "fails"})
    rows = sphinxext.claims_rows(tmp_path, registry=reg)
    assert rows[-1]["follows_from"] == "head" and rows[0]["follows_from"] == ""
    t = sphinxext.claims_tally(rows)
    assert t == {"claims_holds": 2, "claims_fails": 0, "claims_partly": 1, "claims_undecided": 0,
                 "claims_counted": 4, "claims_not_measured": 1, "claims_consequences": 1}
    from stumplib.book.sphinxext.claims_data import tally_sentence

    parts = tally_sentence(t)
    text = "".join(p for p, _ in parts)
    assert text == ("Of the 4 claims tested, 2 hold, 0 fail, 1 is partly met and 0 are "
                    "undecided; 1 could not be measured in this build; 1 row follows from others "
                    "and is not counted (marked †).")
    ids = {i: p for p, i in parts if i}
    assert ids == {"claims_holds": "2", "claims_fails": "0", "claims_partly": "1",
                   "claims_undecided": "0"} and set(ids) == set(sphinxext.TALLY_NAMES.values())
    # any registry: the real one counts every claim but its consequences
    from stumplib.book import registry

    full = sphinxext.claims_tally(sphinxext.claims_rows(tmp_path / "none"))
    assert full["claims_counted"] == len(registry.counted()) == full["claims_not_measured"]
    assert full["claims_consequences"] == len(registry.REGISTRY) - len(registry.counted()) >= 1


def test_compare_reports_a_changed_status_and_an_estimate_beyond_its_interval(tmp_path, capsys):
    def row(key, status, e, lo, hi):
        return {"key": key, "chapter": "c", "status": status, "estimate": e, "lower": lo, "upper": hi}
    a = [row("same", "holds", 1.0, 0.9, 1.1), row("moved", "holds", 1.0, 0.9, 1.1),
         row("flipped", "holds", 1.0, 0.9, 1.1), row("empty", "undecided", "", "", "")]
    b = [row("same", "holds", 1.05, 0.95, 1.15), row("moved", "holds", 1.3, 1.25, 1.35),
         row("flipped", "fails", 1.0, 0.9, 1.1), row("empty", "undecided", "", "", ""),
         row("new", "holds", 1.0, 0.9, 1.1)]
    got = compare.compare_claims(a, b)
    assert [g.split(" ")[0] for g in got] == ["moved", "flipped", "new:"]
    assert "status holds -> fails" in got[1] and "estimate 1 [0.9, 1.1] -> 1.3" in got[0]
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "claims.json").write_text(json.dumps(a))
    (tmp_path / "b.json").write_text(json.dumps(b))
    assert book_main(["compare", str(tmp_path / "a"), str(tmp_path / "b.json")]) == 0
    out = capsys.readouterr().out
    assert "flipped (c): status holds -> fails" in out and "3 of 5 claims changed" in out
    assert compare.compare_claims(a, a) == []


def test_glued_values_prefer_the_build_glue_store(tmp_path):
    """myst-nb keeps the glued values in ``<name>.glue.json`` beside the executed notebook."""
    _fake_executed(tmp_path, "ch", {"x_status": "fails"})
    assert sphinxext.glued_values(tmp_path / "ch.ipynb") == {"x_status": "fails"}
    (tmp_path / "ch.glue.json").write_text(json.dumps({
        "x_status": _glue_output("x_status", "holds"), "x_estimate": _glue_output("x_estimate", 0.5)}))
    assert sphinxext.glued_values(tmp_path / "ch.ipynb") == {"x_status": "holds", "x_estimate": 0.5}


def test_one_line_docstring_entries_become_numpy_entries():
    """What napoleon renders wrongly: a description where a type belongs (bold, literal
    backticks), a type and its description on one line, and a Returns sentence wrapped at the
    section's indentation (one bullet per line)."""
    doc = ["Summary.", "", "Parameters", "----------",
           "x, y : torch.Tensor, shape ``(..., N)``: features and labels.",
           "n_boot : number of resamples.", "tol : float", "    A tolerance.", "",
           "Returns", "-------", "``holds`` when the target lies inside; ``fails``",
           "when it lies outside."]
    got = sphinxext.numpy_sections(doc)
    assert got[:4] == doc[:4]
    assert got[4:10] == ["x, y : torch.Tensor, shape (..., N)", "    features and labels.",
                         "n_boot", "    number of resamples.", "tol : float", "    A tolerance."]
    assert got[-4:] == ["Returns", "-------",  # a description only: one line
                        "``holds`` when the target lies inside; ``fails`` when it lies outside.", ""]
    proper = ["Returns", "-------", "numpy.ndarray", "    Shape ``(n,)``."]
    assert [g for g in sphinxext.numpy_sections(proper) if g] == proper  # numpy style kept


def test_a_returns_description_is_one_line_and_not_bold():
    from sphinx.ext.napoleon import Config
    from sphinx.ext.napoleon.docstring import NumpyDocstring

    doc = ["Summary.", "", "Parameters", "----------", "path : the file.", "",
           "Returns", "-------", "``(runs, meta)``: ``runs`` as :func:`study` returns them", "and",
           "``meta`` the run's command."]
    rst = str(NumpyDocstring(sphinxext.numpy_sections(doc),
                             Config(napoleon_use_rtype=False))).splitlines()
    rst = sphinxext.unbold_returns(rst)
    assert ":param path: the file." in rst
    assert (":returns: ``(runs, meta)``: ``runs`` as :func:`study` returns them and ``meta`` "
            "the run's command.") in rst
    typed = ["Returns", "-------", "dict of ndarray, each of shape ``(Nb, Nc)``: the field."]
    assert [g for g in sphinxext.numpy_sections(typed) if g] == [
        "Returns", "-------", "dict of ndarray, each of shape (Nb, Nc)", "    the field."]


def test_library_calls_reads_module_and_direct_calls_from_the_code(tmp_path):
    cells = [
        "from stumplib import book\nfrom stumplib.book import claims\nfrom stumplib.book.studies import frozen as F\n"
        "from stumplib.core.stats import Estimate, fit_power_law\nimport numpy as np",
        "x = F.sq_errors(betas, bs, 4)\ne = Estimate(1, 0, 2)\nbook.glue_value('a', F._private(x))\n"
        "cs.kept()  # a method on an object: not resolved\nnp.log(2)",
        "%matplotlib inline",  # does not parse: skipped
        "claims.decide('head', e)",
    ]
    nb = {"cells": [{"cell_type": "code", "source": c} for c in cells]
          + [{"cell_type": "markdown", "source": "F.sq_errors(y) in prose is not code"}],
          "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    (tmp_path / "c.ipynb").write_text(json.dumps(nb))
    got = sphinxext.library_calls(tmp_path / "c.ipynb")
    assert got == {"stumplib.book.studies.frozen": ["sq_errors"], "stumplib.book.glue": ["glue_value"],
                   "stumplib.book.claims": ["decide"], "stumplib.core.stats.estimate": ["Estimate"]}
    assert sphinxext.library_calls(tmp_path / "missing.ipynb") == {}


def test_every_chapter_lists_its_library_calls_and_each_one_is_documented():
    # the {library-calls} directive ends every chapter; each call it lists is a public name of a
    # module that the reference page documents (automodule: the module's __all__)
    import importlib

    reference = (ROOT / "reference.md").read_text()
    for nb in sorted((ROOT / "chapters").glob("*.ipynb")):
        md = "".join("".join(c["source"]) for c in json.loads(nb.read_text())["cells"]
                     if c["cell_type"] == "markdown")
        assert "```{library-calls}" in md, f"{nb.name} does not list its library calls"
        for module, names in sphinxext.library_calls(nb).items():
            assert f"automodule:: {module}\n" in reference, f"{module} is not on the reference page"
            public = getattr(importlib.import_module(module), "__all__", None)
            for name in names:
                assert public is None or name in public, f"{nb.name}: {module}.{name} undocumented"
