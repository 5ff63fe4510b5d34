"""Every public function and class of ``stumplib`` has a numpy-style docstring that documents it.

Public: listed in the module's ``__all__``, or (without ``__all__``) a module-level name without a
leading underscore; the public methods of a public class too. The checks, from the source (``ast``,
nothing imported, so the test takes a second):

- a module docstring;
- a docstring on every public function, class and method;
- a ``Parameters`` section (numpy style: the title underlined with dashes) naming every argument
  (``self``/``cls`` aside; ``*args``/``**kw`` by their names) for a function that takes any; an
  entry may name several arguments (``x, y : ...``);
- a ``Returns`` (or ``Yields``) section for a function that returns something (a ``return`` with
  a value in its own body, or a return annotation other than ``None``); properties are exempt
  (their docstring says what they are).

A class's constructor arguments are documented in the class docstring (``Parameters`` or, for
dataclasses, ``Attributes``) or in ``__init__``'s.
"""
from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1] / "stumplib"


_SECTION = re.compile(r"^\s*([A-Z][A-Za-z ]+)\n\s*-{3,}\s*$", re.M)
_ENTRY = re.compile(r"^(\*{0,2}[A-Za-z_][A-Za-z0-9_]*(?:\s*,\s*\*{0,2}[A-Za-z_][A-Za-z0-9_]*)*)\s*(?::|$)")


def sections(doc: str) -> dict[str, str]:
    """The numpy sections of a docstring: ``{title: body}`` (body without the dashes line)."""
    doc = doc.expandtabs()
    out: dict[str, str] = {}
    marks = list(_SECTION.finditer(doc))
    for k, m in enumerate(marks):
        end = marks[k + 1].start() if k + 1 < len(marks) else len(doc)
        out[m.group(1).strip()] = doc[m.end():end]
    return out


def documented_names(body: str) -> set[str]:
    """Argument names of a ``Parameters``/``Attributes`` body: the entries at its least indentation."""
    lines = [ln for ln in body.split("\n") if ln.strip()]
    if not lines:
        return set()
    base = min(len(ln) - len(ln.lstrip()) for ln in lines)
    names: set[str] = set()
    for ln in lines:
        if len(ln) - len(ln.lstrip()) != base:
            continue
        m = _ENTRY.match(ln.strip())
        if m:
            names.update(n.strip().lstrip("*") for n in m.group(1).split(","))
    return names


def _arguments(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> list[str]:
    a = fn.args
    names = [x.arg for x in a.posonlyargs + a.args + a.kwonlyargs]
    names += [x.arg for x in (a.vararg, a.kwarg) if x is not None]
    return [n for n in names if n not in ("self", "cls")]


def _returns_value(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    if fn.returns is not None:
        ann = ast.unparse(fn.returns)
        if ann in ("None", "NoReturn"):
            return False
        return True
    todo = list(fn.body)
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue  # a nested scope's returns are not this function's
        if isinstance(node, ast.Return) and node.value is not None and not (
                isinstance(node.value, ast.Constant) and node.value.value is None):
            return True
        if isinstance(node, (ast.Yield, ast.YieldFrom)):
            return True
        todo.extend(ast.iter_child_nodes(node))
    return False


def _is_property(fn: ast.AST) -> bool:
    return any(ast.unparse(d).split(".")[-1] in ("property", "cached_property", "setter")
               for d in getattr(fn, "decorator_list", []))


def _is_dataclass(cls: ast.ClassDef) -> bool:
    return any("dataclass" in ast.unparse(d) for d in cls.decorator_list)


def check_function(fn: ast.FunctionDef | ast.AsyncFunctionDef, where: str,
                   extra_doc: str = "") -> list[str]:
    """Problems of one function's docstring (``extra_doc``: a class docstring documenting ``__init__``)."""
    doc = ast.get_docstring(fn) or ""
    if not doc and not extra_doc:
        return [f"{where}: no docstring"]
    problems = []
    args = _arguments(fn)
    if args:
        secs = {**sections(extra_doc), **sections(doc)}
        body = secs.get("Parameters", "") + "\n" + secs.get("Attributes", "") * bool(extra_doc)
        if "Parameters" not in secs and not (extra_doc and "Attributes" in secs):
            problems.append(f"{where}: no Parameters section (arguments {', '.join(args)})")
        else:
            missing = [a for a in args if a not in documented_names(body)]
            if missing:
                problems.append(f"{where}: arguments not documented: {', '.join(missing)}")
    if fn.name != "__init__" and not _is_property(fn) and _returns_value(fn):
        secs = sections(doc)
        if "Returns" not in secs and "Yields" not in secs:
            problems.append(f"{where}: no Returns section")
    return problems


def _public_names(tree: ast.Module) -> set[str] | None:
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__"
                                                for t in node.targets):
            return set(ast.literal_eval(node.value))
    return None


def check_module(path: Path) -> list[str]:
    """Problems of one module: its docstring and every public function, class and method."""
    rel = path.relative_to(ROOT).as_posix()
    tree = ast.parse(path.read_text())
    problems = [] if ast.get_docstring(tree) else [f"{rel}: no module docstring"]
    public = _public_names(tree)
    for node in tree.body:
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        if (node.name not in public) if public is not None else node.name.startswith("_"):
            continue
        where = f"{rel}:{node.lineno} {node.name}"
        if isinstance(node, ast.ClassDef):
            cdoc = ast.get_docstring(node) or ""
            if not cdoc:
                problems.append(f"{where}: no docstring")
            for item in node.body:
                if not isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    continue
                if item.name == "__init__":
                    problems += check_function(item, f"{where}.__init__", extra_doc=cdoc or " ")
                elif not item.name.startswith("_"):
                    problems += check_function(item, f"{where}.{item.name}")
        else:
            problems += check_function(node, where)
    return problems


MODULES = sorted(p for p in ROOT.rglob("*.py") if p.name != "__init__.py" or p.read_text().strip())


@pytest.mark.parametrize("path", MODULES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_public_docstrings_document_every_argument_and_return(path):
    problems = check_module(path)
    assert not problems, "\n".join(problems)


def test_the_checker_finds_what_it_should():
    """The checker itself on synthetic modules: each defect is found, a complete docstring passes."""
    good = '''"""A module."""
def f(x, *, y=1, **kw):
    """Do.

    Parameters
    ----------
    x, y : int
        Values.
    **kw
        Passed on.

    Returns
    -------
    int
    """
    return x
'''
    tree = ast.parse(good)
    assert check_function(tree.body[1], "f") == []
    bad_arg = good.replace("x, y : int", "x : int")
    assert "not documented: y" in check_function(ast.parse(bad_arg).body[1], "f")[0]
    no_ret = good.replace("Returns\n    -------\n    int\n", "")
    assert check_function(ast.parse(no_ret).body[1], "f") == ["f: no Returns section"]
    no_par = '''def g(a):
    """Only a summary."""
'''
    assert "no Parameters" in check_function(ast.parse(no_par).body[0], "g")[0]
    nested = '''def h():
    """Nothing returned here.

    """
    def inner():
        return 1
    inner()
'''
    assert check_function(ast.parse(nested).body[0], "h") == []


def test_no_docstring_reads_as_an_rst_substitution():
    """``|m|`` outside a literal is an RST substitution reference: Sphinx stops with "Undefined
    substitution" on the reference page. Absolute values belong in double backticks or math."""
    bad = []
    for path in sorted(ROOT.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, (ast.Module, ast.FunctionDef, ast.ClassDef)):
                continue
            doc = ast.get_docstring(node) or ""
            text = re.sub(r"``.*?``|:\w+:`[^`]*`|`[^`]*`", "", doc, flags=re.S)
            for m in re.finditer(r"(?<![|\w])\|[^|\s`][^|\n`]*\|(?![|\w])", text):
                bad.append(f"{path.relative_to(ROOT)}: {m.group(0)}")
    assert not bad, bad
