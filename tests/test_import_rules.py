"""The library's layering, read from the source (ast): the science apart from the book.

- ``stumplib.stump`` and ``stumplib.phase`` (the science) import nothing from ``stumplib.book``
  (nor ``stumplib.sweep``), no matplotlib, IPython, myst-nb or Sphinx, and read no file of the
  repository's ``scripts/`` folder;
- ``stumplib.core`` (the services both use) imports neither the science nor the book;
- no module imports another module's private name (``from x import _y``), so every name that
  crosses a module boundary is public and documented;
- every module is at most :data:`MAX_LINES` lines (one job a module).
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "stumplib"
SCIENCE = ("stump", "phase")
#: presentation and documentation libraries the science must not need
FORBIDDEN_IN_SCIENCE = ("matplotlib", "IPython", "myst_nb", "sphinx", "docutils", "papermill",
                        "stumplib.book", "stumplib.sweep")
#: the longest a module may be
MAX_LINES = 720


def _modules(sub: str | None = None) -> list[Path]:
    root = PACKAGE / sub if sub else PACKAGE
    return sorted(p for p in root.rglob("*.py") if "__pycache__" not in p.parts)


def _imports(path: Path) -> list[tuple[int, str, list[str]]]:
    """``(line, module, names)`` of every import in ``path``, at any depth (lazy imports too)."""
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name, []) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            mod = node.module
            if node.level:  # relative: resolve against the package
                parts = path.relative_to(PACKAGE.parent).with_suffix("").parts[:-node.level]
                mod = ".".join(parts + (node.module,))
            out.append((node.lineno, mod, [a.name for a in node.names]))
    return out


def _rel(p: Path) -> str:
    return str(p.relative_to(PACKAGE.parent))


@pytest.mark.parametrize("sub", SCIENCE)
def test_the_science_imports_nothing_of_the_book_nor_of_presentation(sub):
    bad = [f"{_rel(p)}:{line} imports {mod}" for p in _modules(sub) for line, mod, _ in _imports(p)
           if any(mod == f or mod.startswith(f + ".") for f in FORBIDDEN_IN_SCIENCE)]
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("sub", SCIENCE)
def test_the_science_reads_no_file_of_the_scripts_folder(sub):
    bad = [f"{_rel(p)} names the scripts folder" for p in _modules(sub)
           if '"scripts"' in p.read_text() or "'scripts'" in p.read_text()]
    assert not bad, "\n".join(bad)


def test_core_imports_neither_the_science_nor_the_book():
    bad = [f"{_rel(p)}:{line} imports {mod}" for p in _modules("core") for line, mod, _ in _imports(p)
           if mod.startswith(("stumplib.stump", "stumplib.phase", "stumplib.book", "stumplib.sweep"))]
    assert not bad, "\n".join(bad)


def test_no_module_imports_another_modules_private_name():
    bad = [f"{_rel(p)}:{line} imports {n} from {mod}" for p in _modules()
           for line, mod, names in _imports(p) if mod.startswith("stumplib")
           for n in names if n.startswith("_") and not n.startswith("__")]
    assert not bad, "\n".join(bad)


def test_every_module_is_short():
    long = [f"{_rel(p)}: {n} lines" for p in _modules()
            if (n := len(p.read_text().splitlines())) > MAX_LINES]
    assert not long, f"modules over {MAX_LINES} lines (split them by job):\n" + "\n".join(long)


def test_the_checks_find_what_they_should(tmp_path, monkeypatch):
    """The rules on a planted package: a science module importing the book lazily, a private
    import and a long module are each found."""
    pkg = tmp_path / "stumplib"
    (pkg / "phase").mkdir(parents=True)
    (pkg / "core").mkdir()
    (pkg / "phase" / "a.py").write_text("def f():\n    from stumplib.book import verdicts\n"
                                        "from stumplib.core.x import _private\n")
    (pkg / "core" / "b.py").write_text("x = 1\n" * (MAX_LINES + 1))
    monkeypatch.setattr(__import__(__name__), "PACKAGE", pkg, raising=False)
    globals()["PACKAGE"] = pkg
    try:
        with pytest.raises(AssertionError, match="imports stumplib.book"):
            test_the_science_imports_nothing_of_the_book_nor_of_presentation("phase")
        with pytest.raises(AssertionError, match="imports _private"):
            test_no_module_imports_another_modules_private_name()
        with pytest.raises(AssertionError, match="core/b.py"):
            test_every_module_is_short()
    finally:
        globals()["PACKAGE"] = Path(__file__).resolve().parents[1] / "stumplib"
