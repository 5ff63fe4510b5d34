"""The README's chapter <-> module <-> test map is generated from the chapters' actual imports.

``python tests/test_readme_map.py`` prints the map; the test fails when the README's copy (between
the ``<!-- map:start -->`` and ``<!-- map:end -->`` markers) differs, and prints the table to paste.
A chapter's modules are the ``stumplib`` modules its code cells import, less the chapter services
(:data:`SERVICES`, listed once in the last row); a module's tests are ``tests/test_<name>.py`` or
``tests/<package>/test_<name>.py`` (a module of a subpackage, ``book/sections/<name>``: also
``tests/book/test_sections_<name>.py``; else the package's ``tests/test_<package>.py``); figure
modules (``book/plots/*``) are tested through the chapter (``test_notebooks.py``,
``test_site.py``).
"""
from __future__ import annotations

import ast
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "stumplib"
START, END = "<!-- map:start -->", "<!-- map:end -->"

#: modules every chapter uses for its plumbing, shown in the last row with the book-wide tests
SERVICES = (["book"] + ["book/" + m for m in ("page", "glue", "cache", "registry", "claims", "audit",
                                              "verdicts", "typeset", "runs", "compare", "style",
                                              "figcheck", "sphinxext")]
            + ["core/" + m for m in ("stats", "validation", "device", "errors", "results_io", "memo",
                                     "version")])
#: tests of the book as a whole
BOOK_TESTS = ["test_notebooks.py", "test_determinism.py", "test_bad_input.py", "test_build_cache.py",
              "test_site.py", "test_readme_map.py", "test_glue_snapshot.py", "test_docstrings.py"]


def _is_module(dotted: str) -> bool:
    p = PACKAGE.joinpath(*dotted.split("."))
    return p.with_suffix(".py").is_file() or (p / "__init__.py").is_file()


def chapter_modules(nb_path: Path) -> list[str]:
    """The ``stumplib`` modules a chapter's code cells import, as ``a`` or ``a/b`` paths."""
    nb = json.loads(nb_path.read_text())
    found: set[str] = set()
    for cell in nb["cells"]:
        if cell["cell_type"] != "code":
            continue
        src = "\n".join(ln for ln in "".join(cell["source"]).splitlines()
                        if not ln.lstrip().startswith(("%", "!")))
        for node in ast.walk(ast.parse(src)):
            names: list[str] = []
            if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "stumplib":
                base = node.module[len("stumplib"):].lstrip(".")
                subs = [f"{base}.{a.name}".lstrip(".") for a in node.names]
                names = [s for s in subs if _is_module(s)] or ([base] if base else [])
            elif isinstance(node, ast.Import):
                names = [a.name[len("stumplib."):] for a in node.names if a.name.startswith("stumplib.")]
            found.update(n.replace(".", "/") for n in names if n)
    return sorted(found)


def module_tests(module: str) -> list[str]:
    """The test files of one module (paths relative to ``tests/``)."""
    parts = module.split("/")
    if parts[:2] == ["book", "plots"]:
        return []
    cands = ["/".join(parts[:-1] + [f"test_{parts[-1]}.py"]), f"test_{parts[-1]}.py", f"test_{parts[0]}.py"]
    if len(parts) > 2:  # book/sections/<name>: tests/book/test_sections_<name>.py
        cands.insert(1, "/".join(parts[:-2] + [f"test_{parts[-2]}_{parts[-1]}.py"]))
    for c in cands:
        if (ROOT / "tests" / c).is_file():
            return [c]
    return []


def _cell(items: list[str]) -> str:
    return ", ".join(f"`{i}`" for i in items)


def table() -> str:
    """The map as a Markdown table, one row a chapter and a last row for the whole book."""
    rows = ["| chapter | modules | tests |", "| --- | --- | --- |"]
    for nb in sorted((ROOT / "chapters").glob("*.ipynb")):
        num, _, words = nb.stem.partition("_")
        mods = [m for m in chapter_modules(nb) if m not in SERVICES]
        mods.sort(key=lambda m: (m.startswith("book/plots/"), m))
        tests = sorted({t for m in mods for t in module_tests(m)})
        rows.append(f"| {int(num)} {words.replace('_', ' ')} | {_cell(mods)} | {_cell(tests)} |")
    services = [m for m in SERVICES if _is_module(m.replace("/", "."))]
    tests = [t for m in services for t in module_tests(m)]
    tests += [t for t in BOOK_TESTS if (ROOT / "tests" / t).is_file() and t not in tests]
    rows.append(f"| all | {_cell(services)} | {_cell(tests)} |")
    return "\n".join(rows)


def test_readme_map_matches_the_chapters_imports():
    readme = (ROOT / "README.md").read_text()
    m = re.search(re.escape(START) + r"\n(.*?)\n" + re.escape(END), readme, re.S)
    assert m, f"README.md has no {START} ... {END} block"
    want = table()
    assert m.group(1).strip() == want, ("README.md's chapter/module/test map is out of date; "
                                        "replace it with (python tests/test_readme_map.py):\n" + want)


def test_every_module_a_chapter_imports_has_tests():
    """Each library module behind a chapter (figure modules aside) has its own test file."""
    missing = sorted({m for nb in (ROOT / "chapters").glob("*.ipynb") for m in chapter_modules(nb)
                      if m not in SERVICES and not m.startswith("book/plots/") and not module_tests(m)})
    assert not missing, f"modules without tests/test_<module>.py: {missing}"


if __name__ == "__main__":
    sys.stdout.write(table() + "\n")
