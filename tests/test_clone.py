"""A complete clone: the book needs nothing outside the repository.

Chapters 6 and 7 compare against published reference curves that once lived in the developers'
``../shared`` folder, which a user's clone does not have; they now ship with ``stumplib`` as
package data (``stumplib/phase/reference/cui2024/``). The shared smoke execution
(``executed_chapter`` in ``conftest.py``) runs every chapter in a copy of the repository's files
(``conftest.clone``: what ``git ls-files`` lists, tracked or untracked-but-not-ignored) alone in a
temporary folder, importing ``stumplib`` from that copy, so no route leads to ``../shared`` or to
anything else outside the repository. On that run (no extra execution: CI's time budget):

- chapters 6 and 7 print no NaN: no glued value their text cites, no table or text a shown cell
  prints (``slow``);

and, without executing anything: the reference files are in the copy and are package data of the
install (``pyproject.toml``), and the NaN scan finds what it must.
"""
from __future__ import annotations

import fnmatch
import re
import tomllib

import pytest

from conftest import CHAPTERS, ROOT, clone_files, glued, payload

#: the chapters that read the published curves and the recorded runs
PHASE_CHAPTERS = [p for p in CHAPTERS if p.stem in ("06_positional_semantic", "07_flat_window")]
#: a glue a page cites: {glue}`name`, {glue:text}`name:fmt`, {glue:math}`name` (figures are images)
GLUE_CITED = re.compile(r"\{glue(?::text|:math)?\}`([^`]+)`")
#: a NaN as Python, numpy, pandas or a format prints it (not part of a word such as "nanoseconds")
NAN = re.compile(r"(?<![A-Za-z0-9_])[-+]?nan(?![A-Za-z0-9_])", re.IGNORECASE)
#: the tags that keep a cell's outputs off the page
HIDDEN = {"remove-cell", "remove-output"}
#: the mime types a page prints as text (images are checked elsewhere)
TEXT_MIMES = ("text/markdown", "text/html", "text/latex", "text/plain")


def _cited(nb: dict, doc: str) -> set[str]:
    """The glue names the notebook's own Markdown cites (``other.ipynb::name`` left to that page)."""
    names = set()
    for cell in nb["cells"]:
        if cell["cell_type"] != "markdown":
            continue
        for ref in GLUE_CITED.findall("".join(cell["source"])):
            if "::" in ref:
                where, ref = ref.split("::", 1)
                if where.rsplit("/", 1)[-1].removesuffix(".ipynb") != doc:
                    continue
            names.add(ref.split(":", 1)[0].strip())
    return names


def printed_text(nb: dict, doc: str) -> dict[str, str]:
    """What an executed notebook's page prints as text, ``{where: text}``: every glued value its
    Markdown cites (``glue <name>``) and every output of a shown cell (``cell <id>``: displayed
    Markdown, HTML or plain text, and standard output; glue outputs themselves are not shown)."""
    out = {}
    values = glued(nb)
    for name in sorted(_cited(nb, doc)):
        got = payload(values.get(name, {}), ("text/plain",))
        out[f"glue {name}"] = got[1] if got else ""
    for i, cell in enumerate(nb["cells"]):
        if cell["cell_type"] != "code" or HIDDEN & set(cell.get("metadata", {}).get("tags", [])):
            continue
        texts = []
        for o in cell.get("outputs", []):
            if o.get("metadata", {}).get("scrapbook"):
                continue  # a glued value: printed only where the text cites it (above)
            if o.get("output_type") == "stream":
                if o.get("name") == "stdout":
                    texts.append("".join(o.get("text", "")))
                continue
            data = o.get("data", {})
            for mime in TEXT_MIMES:
                if mime in data:
                    v = data[mime]
                    texts.append("".join(v) if isinstance(v, list) else str(v))
                    break
        if texts:
            out[f"cell {cell.get('id', i)}"] = "\n".join(texts)
    return out


def nan_problems(nb: dict, doc: str) -> list[str]:
    """Each printed text (:func:`printed_text`) holding a NaN, with the NaN in its context."""
    bad = []
    for where, text in printed_text(nb, doc).items():
        m = NAN.search(text)
        if m:
            bad.append(f"{where}: ...{text[max(m.start() - 60, 0):m.end() + 40]}...")
    return bad


# ------------------------------------------------------------------------------------ the run
def test_chapters_6_and_7_are_both_checked():
    assert [p.stem for p in PHASE_CHAPTERS] == ["06_positional_semantic", "07_flat_window"]


@pytest.mark.slow
@pytest.mark.parametrize("path", PHASE_CHAPTERS, ids=[p.stem for p in PHASE_CHAPTERS])
def test_chapter_prints_no_nan_from_a_clone_without_shared(path, executed_chapter):
    """Chapters 6 and 7 executed at ``smoke`` in the copy (the shared smoke run): no NaN on
    their pages."""
    nb = executed_chapter(path)
    root = executed_chapter.root
    if clone_files() is not None:  # a git checkout: the run must have been in the copy
        assert root != ROOT and [p.name for p in root.parent.iterdir()] == [root.name], root
    got = printed_text(nb, path.stem)
    assert sum(k.startswith("glue ") for k in got) > 80 and any(k.startswith("cell ") for k in got)
    bad = nan_problems(nb, path.stem)
    assert not bad, f"{path.stem} prints NaN ({len(bad)}):\n" + "\n".join(bad)


# ------------------------------------------------------------------------------------ fast
def test_reference_files_are_in_a_clone_and_ship_as_package_data():
    """The published files and their README are in what a clone holds, and the install's
    package-data patterns (``pyproject.toml``) match them: ``pip install .`` ships them
    (``test_install.py`` reads them from an installed copy)."""
    from stumplib.book.studies.published import REFERENCE_FILES, reference_file

    here = "stumplib/phase/reference/cui2024/"
    wanted = [here + f for f in (*REFERENCE_FILES, "README.md")]
    files = clone_files()
    if files is not None:
        missing = sorted(set(wanted) - set(files))
        assert not missing, f"not in the repository (git add them): {missing}"
    patterns = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"][
        "package-data"]["stumplib.phase"]
    for f in wanted:
        rel = f.removeprefix("stumplib/phase/")
        assert any(fnmatch.fnmatch(rel, p) for p in patterns), f"{f} is not package data"
    for name in REFERENCE_FILES:
        assert reference_file(name).read_text().count("\n") > 10, name


def _nb(cells: list[dict]) -> dict:
    return {"cells": cells}


def _glue(name: str, text: str) -> dict:
    return {"output_type": "display_data", "metadata": {"scrapbook": {"name": name}},
            "data": {"application/papermill.record/text/plain": text}}


def test_the_nan_scan_finds_printed_nans_only():
    """A cited glued NaN, a NaN in a shown table and in printed text are found; a NaN glued but not
    cited, one in a removed cell, and words such as 'nanoseconds' or 'Nancy' are not."""
    md = {"cell_type": "markdown", "source": ["x = {glue:text}`a:.3f`, y = {glue}`b`, ",
                                               "z = {glue:text}`other.ipynb::c:.1f`"]}
    glues = {"cell_type": "code", "id": "g", "metadata": {"tags": ["remove-cell"]},
             "outputs": [_glue("a", "nan"), _glue("b", "0.5"), _glue("c", "nan"),
                         _glue("d", "nan")]}
    table = {"cell_type": "code", "id": "t", "metadata": {"tags": ["remove-input"]},
             "outputs": [{"output_type": "display_data",
                          "data": {"text/markdown": "| q | v |\n|---|---|\n| 1 | nan |",
                                   "text/plain": "<IPython.core.display.Markdown object>"}}]}
    hidden = {"cell_type": "code", "id": "h", "metadata": {"tags": ["remove-cell"]},
              "outputs": [{"output_type": "stream", "name": "stdout", "text": "nan\n"}]}
    words = {"cell_type": "code", "id": "w", "metadata": {},
             "outputs": [{"output_type": "stream", "name": "stdout",
                          "text": "took 40 nanoseconds; Nancy; finite 0.25\n"}]}
    bad = nan_problems(_nb([md, glues, table, hidden, words]), "this")
    assert [b.split(":", 1)[0] for b in bad] == ["glue a", "cell t"], bad
    printed = {"cell_type": "code", "id": "p", "metadata": {},
               "outputs": [{"output_type": "execute_result", "data": {"text/plain": "array([1., nan])"}}]}
    assert [b.split(":", 1)[0] for b in nan_problems(_nb([printed]), "this")] == ["cell p"]
