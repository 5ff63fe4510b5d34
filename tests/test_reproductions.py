"""Code a student can follow (issue 49, part 2).

Every chapter has one **self-contained reproduction**: a shown code cell tagged ``reproduction``,
plain numpy/scipy/torch (no ``stumplib``), at most 30 lines, that recomputes one of the chapter's
numbers and assigns it to ``reproduced``; the chapter prints it beside the library's number and
glues both (``repro_value``; ``repro_library`` with ``_lo`` and ``_hi``: the library's number with
its own interval, for a deterministic number the tolerance it is computed to). Checked here on the
shared smoke execution (``conftest.executed_chapter``: no extra chapter runs): the reproduction lies
inside the library number's interval.

Statically, without executing anything: no shown cell calls a function or class that only a
removed cell defines (``remove-cell`` / ``remove-input``), so that expanding every cell of a page
shows how each of its results was made.
"""
from __future__ import annotations

import ast
import json
import math
from pathlib import Path

import pytest

from conftest import CHAPTERS, glued, payload

IDS = [p.stem for p in CHAPTERS]

#: tags that keep a cell's source off the page
REMOVED = {"remove-cell", "remove-input"}
#: the reproduction's size: "at most about 30 lines"
MAX_LINES = 30


def _code_cells(path: Path) -> list[dict]:
    nb = json.loads(path.read_text())
    return [c for c in nb["cells"] if c["cell_type"] == "code"]


def _tags(cell: dict) -> set[str]:
    return set(cell.get("metadata", {}).get("tags", []))


def _reproduction(path: Path) -> dict:
    cells = [c for c in _code_cells(path) if "reproduction" in _tags(c)]
    assert len(cells) == 1, f"{path.name}: {len(cells)} cells tagged 'reproduction', want one"
    return cells[0]


def _defined(tree: ast.AST) -> set[str]:
    """Functions, classes and lambdas a cell defines at any depth."""
    names = {n.name for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    for n in ast.walk(tree):
        if isinstance(n, ast.Assign) and isinstance(n.value, ast.Lambda):
            names |= {t.id for t in n.targets if isinstance(t, ast.Name)}
    return names


def hidden_calls(cells: list[dict]) -> list[tuple[str, str]]:
    """``(cell id, name)`` for each call in a shown cell of a function that only removed cells
    define."""
    hidden, shown, calls = set(), set(), []
    for i, cell in enumerate(cells):
        tree = ast.parse("".join(cell["source"]))
        removed = bool(REMOVED & _tags(cell))
        (hidden if removed else shown).update(_defined(tree))
        if not removed:
            calls += [(cell.get("id", str(i)), n.func.id) for n in ast.walk(tree)
                      if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)]
    return [(i, f) for i, f in calls if f in hidden and f not in shown]


def test_the_hidden_call_rule_finds_a_helper_defined_out_of_sight():
    removed = {"cell_type": "code", "id": "a", "metadata": {"tags": ["remove-cell"]},
               "source": ["def curves(x):\n", "    return x\n", "g = lambda y: y\n"]}
    shown = {"cell_type": "code", "id": "b", "metadata": {}, "source": ["curves(1) + g(2)\n"]}
    assert hidden_calls([removed, shown]) == [("b", "curves"), ("b", "g")]
    visible = dict(removed, metadata={"tags": ["hide-input"]})  # expandable: fine
    assert hidden_calls([visible, shown]) == []


@pytest.mark.parametrize("path", CHAPTERS, ids=IDS)
def test_no_shown_cell_calls_a_helper_defined_only_in_a_removed_cell(path):
    assert hidden_calls(_code_cells(path)) == [], path.name


@pytest.mark.parametrize("path", CHAPTERS, ids=IDS)
def test_the_reproduction_is_shown_short_and_self_contained(path):
    cell = _reproduction(path)
    src = "".join(cell["source"])
    assert not REMOVED & _tags(cell), f"{path.name}: the reproduction is not shown"
    assert "hide-input" not in _tags(cell), f"{path.name}: the reproduction is folded away"
    lines = [ln for ln in src.splitlines() if ln.strip()]
    assert len(lines) <= MAX_LINES, f"{path.name}: {len(lines)} lines > {MAX_LINES}"
    tree = ast.parse(src)
    modules = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import)
               for a in n.names}
    modules |= {n.module.split(".")[0] for n in ast.walk(tree)
                if isinstance(n, ast.ImportFrom) and n.module}
    assert modules <= {"numpy", "scipy", "torch", "math"}, f"{path.name}: imports {modules}"
    assert "stumplib" not in src and "book." not in src, f"{path.name}: not self-contained"
    assigned = {t.id for n in ast.walk(tree) if isinstance(n, ast.Assign)
                for t in n.targets if isinstance(t, ast.Name)}
    assert "reproduced" in assigned, f"{path.name}: the cell does not assign `reproduced`"


@pytest.mark.slow
@pytest.mark.parametrize("path", CHAPTERS, ids=IDS)
def test_the_reproduction_agrees_with_the_library_within_its_interval(path, executed_chapter):
    values = glued(executed_chapter(path))

    def number(name: str) -> float:
        assert name in values, f"{path.name}: nothing glued as {name}"
        return float(payload(values[name], ("text/plain",))[1])

    got, lib = number("repro_value"), number("repro_library")
    lo, hi = number("repro_library_lo"), number("repro_library_hi")
    assert all(map(math.isfinite, (got, lib, lo, hi))), (got, lib, lo, hi)
    assert lo <= lib <= hi and lo < hi, f"{path.name}: the library's interval ({lo}, {hi})"
    assert lo <= got <= hi, (
        f"{path.name}: reproduced {got} outside the library's {lib} [{lo}, {hi}]")
