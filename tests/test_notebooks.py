"""Every chapter executes at the smoke profile, produces everything its text refers to, and is
committed clean; at ``profile=full, token=True`` it runs the full profile's largest shapes with a
token amount of work.

The smoke execution is shared (``executed_chapter`` in ``conftest.py``): one run per chapter per
session serves every check here and the first run of ``test_determinism.py``; the token run at
``profile=full`` is the only other execution of a chapter in the test suite (the cheapest chapters
run once more for the determinism check). CI's book build executes each chapter at ``quick``.
"""
from __future__ import annotations

import ast
import json
import re

import papermill as pm
import pytest

from conftest import CHAPTERS, ROOT, execute, glued, payload

EXPECTED = ["01_setup", "02_population_dynamics", "03_finite_corpus", "04_error_bound",
            "05_boundary_symmetrization", "05_two_heads", "06_positional_semantic",
            "07_flat_window"]
IDS = [p.stem for p in CHAPTERS]
#: chapters whose structure (issue 15) is checked here; the others join as their owners land it
STRUCTURED = ["01_setup", "02_population_dynamics", "03_finite_corpus", "04_error_bound", "05_boundary_symmetrization", "05_two_heads", "06_positional_semantic", "07_flat_window"]

#: characters a code box of the site shows without scrolling sideways (``test_site.py``'s
#: ``test_no_code_box_overflows`` measures it on the built pages)
CODE_BOX = 84
GLUE_ROLE = re.compile(r"\{glue(?::[a-z]+)?\}`([^`]+)`")
GLUE_FIGURE = re.compile(r"\{glue:figure\}\s+(\S+)")


def _ref_name(ref: str) -> tuple[str | None, str]:
    """``"name:fmt"`` -> (None, name); ``"chapters/x.ipynb::name:fmt"`` -> ("x", name)."""
    doc = None
    if "::" in ref:
        doc, ref = ref.split("::", 1)
        doc = doc.rsplit("/", 1)[-1].removesuffix(".ipynb")
    return doc, ref.split(":", 1)[0].strip()


def _markdown(nb: dict) -> str:
    return "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")


def _referenced(text: str) -> tuple[set[tuple[str | None, str]], set[str]]:
    """(glue references, figure names) of a Markdown text."""
    return {_ref_name(r) for r in GLUE_ROLE.findall(text)}, set(GLUE_FIGURE.findall(text))


def _text(data: dict) -> str | None:
    got = payload(data, ("text/plain",))
    return None if got is None else got[1]


def _has_image(data: dict) -> bool:
    return any(k.endswith(("image/png", "image/svg+xml")) for k in data)


def _code(path) -> list[dict]:
    return [c for c in json.loads(path.read_text())["cells"] if c["cell_type"] == "code"]


# ------------------------------------------------------------------------------------ committed
def test_toc_lists_the_seven_chapters():
    toc = (ROOT / "_toc.yml").read_text()
    for name in EXPECTED:
        assert f"chapters/{name}" in toc
        assert (ROOT / "chapters" / f"{name}.ipynb").exists()


@pytest.mark.parametrize("path", CHAPTERS, ids=IDS)
def test_committed_without_outputs_and_with_parameters_cell(path):
    code = _code(path)
    assert not any(c.get("outputs") for c in code), f"{path.name} holds outputs"
    assert not any(c.get("execution_count") for c in code), f"{path.name} holds execution counts"
    first = code[0]
    assert "parameters" in first.get("metadata", {}).get("tags", []), "first code cell must be tagged parameters"
    src = "".join(first["source"])
    for name in ("profile", "device", "seed"):
        assert re.search(rf"^{name}: \w+ = ", src, re.M), f"parameters cell lacks {name}"
    assert 'profile: str = os.environ.get("STUMPBOOK_PROFILE", "quick")' in src


def _conforms(value, tp) -> bool:
    """Whether ``value`` is of the annotated type ``tp`` (the few types a parameter has)."""
    import typing

    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin is typing.Union:
        return any(_conforms(value, a) for a in args)
    if tp is type(None):
        return value is None
    if tp is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if origin in (list, tuple):
        if not isinstance(value, origin):
            return False
        items = args if origin is tuple else args * len(value)
        return len(items) == len(value) and all(_conforms(v, a) for v, a in zip(value, items))
    return isinstance(value, tp)


@pytest.mark.parametrize("path", CHAPTERS, ids=IDS)
def test_papermill_lists_every_parameter(path):
    """``papermill --help-notebook`` lists every name the parameters cell assigns, in order, with
    its type and its meaning: each parameter is one line ``name: type = value  # meaning`` (papermill
    skips a line holding a second ``=``, such as a comment with ``>=``, and shows "Unknown type"
    without an annotation); the annotation holds the default; the lines fit the site's code box."""
    from typing import Optional

    src = "".join(_code(path)[0]["source"])
    body = ast.parse(src).body
    names = [t.id for node in body if isinstance(node, (ast.Assign, ast.AnnAssign))
             for t in (node.targets if isinstance(node, ast.Assign) else [node.target])]
    listed = pm.inspect_notebook(str(path))
    assert list(listed) == names, "papermill --help-notebook lists other names than the cell"
    unannotated = [n.targets[0].id for n in body if isinstance(n, ast.Assign)]
    assert not unannotated, f"parameters without a type annotation: {unannotated}"
    for node in body:
        if not isinstance(node, ast.AnnAssign):
            continue
        name, ann = node.target.id, ast.unparse(node.annotation)
        assert listed[name]["inferred_type_name"] == ann, f"{name}: papermill reads another type"
        assert listed[name]["help"].strip(), f"{name}: no comment, so no meaning in the help"
        try:
            default = ast.literal_eval(node.value)
        except ValueError:
            continue  # profile: from the environment
        assert _conforms(default, eval(ann, {"Optional": Optional})), \
            f"{name}: the default {default!r} is not a {ann}"
    wide = [ln for ln in src.splitlines() if len(ln) > CODE_BOX]
    assert not wide, f"parameter lines over {CODE_BOX} characters (the code box scrolls): {wide}"


def _setup_cells(path) -> set[int]:
    """Indices (among the code cells) of the chapter's set-up: the code cells right after the
    parameters cell, before the next markdown cell (imports, parameter checks, the settings table).
    They may be hidden; every other hidden cell holds one figure call."""
    cells = json.loads(path.read_text())["cells"]
    first = next(i for i, c in enumerate(cells) if c["cell_type"] == "code")
    out, k = set(), 0
    for c in cells[first + 1:]:
        if c["cell_type"] != "code":
            break
        k += 1
        out.add(k)
    return out


@pytest.mark.parametrize("path", [p for p in CHAPTERS if p.stem in STRUCTURED],
                         ids=[s for s in IDS if s in STRUCTURED])
def test_chapter_structure(path):
    """Short code cells of at most 88 characters a line; hidden-input cells hold one figure call
    each (removed cells, tagged ``remove-cell`` or ``remove-input``, may hold set-up, glue and verdict
    assembly); no hard-coded colours; a token parameter; one parameter per line."""
    code = _code(path)
    params = "".join(code[0]["source"])
    assert re.search(r"^token: bool = False\b", params, re.M), "parameters cell lacks token = False"
    for line in params.splitlines()[1:]:
        assert line.count(" = ") <= 1 and ";" not in line.split("#")[0], f"one parameter per line: {line}"
    lengths = []
    setup = _setup_cells(path)
    for k, c in enumerate(code[1:], start=1):
        src = "".join(c["source"])
        lengths.append(src.count("\n") + 1)
        assert lengths[-1] <= 32, f"a code cell of {lengths[-1]} lines:\n{src[:300]}"
        assert not re.search(r"#[0-9A-Fa-f]{6}\b", src), "hard-coded colour (use style.COLORS)"
        wide = [ln for ln in src.splitlines() if len(ln) > 88]
        assert not wide, f"code lines over 88 characters: {wide[:3]}"
        if "hide-input" in c.get("metadata", {}).get("tags", []) and k not in setup:
            for stmt in ast.parse(src).body:  # each: book.glue_value("fig_...", <plots module>.<function>(...))
                seg = ast.get_source_segment(src, stmt)
                assert re.match(r"book\.glue_value\(\"fig_\w+\",\s*\w+\.\w+\(", seg), \
                    f"hidden cell holds more than figure calls:\n{src[:300]}"
    lengths.sort()
    assert lengths[len(lengths) // 2] <= 12, f"median code cell {lengths[len(lengths) // 2]} lines"


# ------------------------------------------------------------------------------------ smoke run
@pytest.mark.slow
@pytest.mark.parametrize("path", CHAPTERS, ids=IDS)
def test_chapter_executes_at_smoke_profile(path, executed_chapter):
    executed_chapter(path)


@pytest.mark.slow
@pytest.mark.parametrize("path", CHAPTERS, ids=IDS)
def test_every_glue_reference_is_produced(path, executed_chapter):
    """Every ``{glue:...}`` name in the chapter's Markdown and every ``chapter::name`` of intro.md is
    glued by the executed chapter; every glued figure is an image; every verdict is a sentence."""
    nb = executed_chapter(path)
    got = glued(nb)
    refs, figures = _referenced(_markdown(nb))
    intro_refs, _ = _referenced((ROOT / "intro.md").read_text())
    wanted = {n for d, n in refs if d in (None, path.stem)} | {n for d, n in intro_refs if d == path.stem}
    missing = sorted((wanted | figures) - set(got))
    assert not missing, f"{path.name}: referenced but not glued: {missing}"
    no_image = sorted(n for n in figures | {n for n in got if n.startswith("fig")} if not _has_image(got[n]))
    assert not no_image, f"{path.name}: glued figures without an image: {no_image}"
    empty = sorted(n for n in got if "verdict" in n and not (_text(got[n]) or "").strip("'\" \n"))
    assert not empty, f"{path.name}: empty verdicts: {empty}"


@pytest.mark.slow
@pytest.mark.parametrize("path", CHAPTERS, ids=IDS)
def test_full_profile_with_token_work(path, tmp_path, notebook_results):
    """``profile=full, token=True``: the full profile's largest shapes with a few steps, records or
    contexts, on the CPU (the chapter must have the ``token`` parameter). The session's result
    store is shared (``conftest.notebook_results``): what does not depend on the profile (chapter
    6's published curves) is computed once."""
    params = "".join(_code(path)[0]["source"])
    assert re.search(r"^token: bool = ", params, re.M), f"{path.name} has no token parameter"
    execute(path, tmp_path / path.name, {"profile": "full", "token": True, "device": "cpu"},
            notebook_results, timeout=1800, cache=True)


# ------------------------------------------------------------------------------------ bad input
@pytest.mark.slow
def test_bad_profile_from_environment_fails_first_cell(tmp_path, monkeypatch):
    monkeypatch.setenv("STUMPBOOK_PROFILE", "bogus")
    with pytest.raises(pm.PapermillExecutionError, match="STUMPBOOK_PROFILE"):
        pm.execute_notebook(str(CHAPTERS[0]), str(tmp_path / "out.ipynb"), cwd=str(CHAPTERS[0].parent),
                            kernel_name="python3", progress_bar=False)


@pytest.mark.slow
@pytest.mark.parametrize("params, message", [
    ({"N": -3}, "N must be an integer"),
    ({"token": "yes"}, "token must be True or False"),
    ({"profle": "quick"}, r"unknown parameter 'profle' \(did you mean 'profile'\?\); "
                          r"valid names: profile, device, seed, token, N, c, tau_lo, tau_hi")],
    ids=["N", "token", "unknown"])
def test_bad_parameter_via_papermill_names_it(tmp_path, params, message):
    """A bad value, or a name the chapter does not have (papermill itself only warns), fails the
    set-up with a message naming it (and, for a name, the valid ones) before any work."""
    with pytest.raises(pm.PapermillExecutionError, match=message):
        pm.execute_notebook(str(CHAPTERS[0]), str(tmp_path / "out.ipynb"),
                            parameters={"profile": "smoke", **params}, cwd=str(CHAPTERS[0].parent),
                            kernel_name="python3", progress_bar=False)


def test_every_notebook_cell_has_an_id():
    """nbformat 4.5 cell ids in every committed notebook (a missing id is a build warning today and
    an error in later nbformat versions)."""
    for path in CHAPTERS + [ROOT / "build_record.ipynb"]:
        nb = json.loads(path.read_text())
        missing = [i for i, c in enumerate(nb["cells"]) if not c.get("id")]
        assert (nb["nbformat"], nb["nbformat_minor"]) >= (4, 5), path.name
        assert not missing, f"{path.name}: cells without an id: {missing}"


@pytest.mark.slow
@pytest.mark.parametrize("path", CHAPTERS, ids=IDS)
def test_glued_intervals_stay_in_their_support(path, executed_chapter):
    """Every glued ``name``/``name_lo``/``name_hi`` of a ratio, MSE, risk or error
    (:func:`stumplib.book.supports.support_floor`) has its interval in the support: above 0, and at
    or above 1 for a risk over the Bayes risk; and every glued interval holds its value."""
    import ast

    from stumplib.book.supports import support_problems

    values = {}
    for name, data in glued(executed_chapter(path)).items():
        text = _text(data)
        if text is None:
            continue
        try:
            values[name] = ast.literal_eval(text)
        except (ValueError, SyntaxError):
            values[name] = text
    bad = support_problems(values)
    assert not bad, f"{path.stem}: intervals outside their support: {bad}"


def test_the_support_scan_catches_the_faults_of_issue_39():
    """The scan flags a ratio interval below 0, a risk over Bayes below 1 and an interval that
    misses its value; it leaves a slope, a signed difference and a correct interval alone."""
    from stumplib.book.supports import support_floor, support_problems

    bad = {"ch5_gain_ratio": 7.39, "ch5_gain_ratio_lo": -2.52, "ch5_gain_ratio_hi": 24.8,
           "two_head_bayes_ratio": 2.54, "two_head_bayes_ratio_lo": 0.584,
           "two_head_bayes_ratio_hi": 5.52,
           "sym_trained_estimate": 9.78, "sym_trained_estimate_lo": 9.8,
           "sym_trained_estimate_hi": 24.6}
    got = support_problems(bad)
    assert len(got) == 3 and "below 0" in got[0] and "below 1" in got[2] and "outside" in got[1]
    fine = {"frozen_slope_mn": -0.8, "frozen_slope_mn_lo": -1.1, "frozen_slope_mn_hi": -0.5,
            "prior_risk_sym_estimate": 61.7, "prior_risk_sym_estimate_lo": 52.0,
            "prior_risk_sym_estimate_hi": 71.2}
    assert support_problems(fine) == []
    assert support_floor("prior_risk_aware_estimate") == 1.0
    assert support_floor("sym_bayes_ratio") == 0.0 and support_floor("bound_mn_worst_slope") is None


def test_section_5_1_reuses_chapter_5s_settings():
    """Section 5.1 (``05_two_heads``) retrains chapter 5's section-2 heads and redraws its
    section-6 contexts: every setting the two pages' tables share (token work included) has the
    same value, and the constants it takes from chapter 5's parameters are their defaults."""
    def assigned(stem: str) -> dict:
        ns: dict = {}
        for c in _code(ROOT / "chapters" / f"{stem}.ipynb"):
            for node in ast.parse("".join(c["source"])).body:
                if (isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name)
                        and node.targets[0].id in ("TABLE", "TOKEN")):
                    exec(compile(ast.Module([node], []), stem, "exec"), {}, ns)
        return ns

    ch5, sec = assigned("05_boundary_symmetrization"), assigned("05_two_heads")
    for name in ("TABLE", "TOKEN"):
        a, b = ch5[name], sec[name]
        for prof in ((None,) if name == "TOKEN" else ("smoke", "quick", "full")):
            x, y = (a, b) if prof is None else (a[prof], b[prof])
            shared = set(x) & set(y)
            assert shared and all(x[k] == y[k] for k in shared), (name, prof)
            assert set(y) - set(x) <= {"twohead_steps", "twohead_corpora"}, (name, prof)
    params = "".join(_code(ROOT / "chapters" / "05_boundary_symmetrization.ipynb")[0]["source"])
    setup = "\n".join("".join(c["source"]) for c in _code(ROOT / "chapters" / "05_two_heads.ipynb"))
    assert "N_ref: int = 64 " in params and "train_lr: float = 1e3 " in params
    assert "interior: tuple[float, float] = (0.2, 0.8) " in params
    assert "N_ref, interior, train_lr = 64, (0.2, 0.8), 1e3" in setup
