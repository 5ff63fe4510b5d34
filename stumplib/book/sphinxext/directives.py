"""The book's directives: ``{claims-rules}`` and ``{seed-audit}`` (the claims registry and the
committed seed audit, rendered at build time on the page "How each claim is judged") and
``{library-calls}`` (on a chapter page, the ``stumplib`` functions its code calls, each linked to
the reference page)."""
from __future__ import annotations

import os
import re
from pathlib import Path

from stumplib.book.sphinxext.stamp import read_json


def _table(header: tuple[str, ...], rows: list[list[str]], widths: list[int]):
    """A docutils table node of plain-text cells."""
    from docutils import nodes

    table = nodes.table(classes=["claims-table"])
    group = nodes.tgroup(cols=len(header))
    table += group
    for w in widths:
        group += nodes.colspec(colwidth=w)

    def row(cells: list[str]):
        r = nodes.row()
        for text in cells:
            entry = nodes.entry()
            para = nodes.paragraph()
            if re.fullmatch(r"[a-z]+(?:_[a-z]+)+", str(text)):  # a function name: shown as code
                para += nodes.literal(text=str(text))
            else:
                para += nodes.Text(str(text))
            entry += para
            r += entry
        return r
    head = nodes.thead()
    head += row(list(header))
    body = nodes.tbody()
    for cells in rows:
        body += row(cells)
    group += head
    group += body
    return table


def library_calls(notebook: str | os.PathLike) -> dict[str, list[str]]:
    """The ``stumplib`` functions and classes a notebook's code cells call, per module.

    Read from the code (Python's ``ast``), not by running it: the names bound by ``from stumplib...
    import ...`` and ``import stumplib... as ...``, then every call ``module.name(...)`` through a
    module alias and every call of a directly imported name, each listed under the module that
    defines it (a re-export such as ``book.cached`` under :mod:`stumplib.book.cache`). Private
    names (``_x``) and calls of methods on objects (``cs.kept()``) are not listed; a cell that
    does not parse is skipped.

    Parameters
    ----------
    notebook : str or os.PathLike
        A ``.ipynb`` file.

    Returns
    -------
    dict[str, list[str]]
        ``{module: sorted names}``: the paper packages' modules first, then ``stumplib.book.plots``,
        then ``stumplib.core``, each group sorted (``{}`` for a file that is not a readable
        notebook).
    """
    import ast
    import importlib

    nb = read_json(Path(notebook)) or {}
    cells = ["".join(c.get("source", "")) for c in nb.get("cells", [])
             if c.get("cell_type") == "code"]
    modules: dict[str, str] = {}  # alias -> module
    objects: dict[str, tuple[str, str]] = {}  # alias -> (module, name)

    def is_module(dotted: str) -> bool:
        try:
            importlib.import_module(dotted)
            return True
        except ImportError:
            return False

    trees = []
    for src in cells:
        try:
            trees.append(ast.parse(src))
        except SyntaxError:
            continue
    for tree in trees:
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("stumplib"):
                for a in node.names:
                    full = f"{node.module}.{a.name}"
                    if is_module(full):
                        modules[a.asname or a.name] = full
                    else:
                        objects[a.asname or a.name] = (node.module, a.name)
            elif isinstance(node, ast.Import):
                for a in node.names:
                    if a.name.startswith("stumplib") and a.asname:
                        modules[a.asname] = a.name
    out: dict[str, set[str]] = {}

    def add(mod: str, name: str) -> None:
        # a name re-exported from another stumplib module is listed where it is defined
        home = getattr(getattr(importlib.import_module(mod), name, None), "__module__", None)
        out.setdefault(home if isinstance(home, str) and home.startswith("stumplib") else mod,
                       set()).add(name)

    for tree in trees:
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            f = node.func
            if (isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name)
                    and f.value.id in modules and not f.attr.startswith("_")):
                add(modules[f.value.id], f.attr)
            elif isinstance(f, ast.Name) and f.id in objects:
                mod, name = objects[f.id]
                if not name.startswith("_"):
                    add(mod, name)
    def rank(m: str) -> tuple[int, str]:  # the science first, then figures, then services
        return (2 if m.startswith("stumplib.core") else 1 if m.startswith("stumplib.book.plots") else 0, m)
    return {m: sorted(out[m]) for m in sorted(out, key=rank)}


def directives():
    """The ``claims-rules``, ``seed-audit``, ``library-calls`` and ``claims-tally`` directive
    classes (Sphinx imported lazily).

    Returns
    -------
    tuple of type
        ``(ClaimsRules, SeedAudit, LibraryCalls, ClaimsTally)``.
    """
    from docutils import nodes
    from sphinx.util.docutils import SphinxDirective

    class ClaimsRules(SphinxDirective):
        """``{claims-rules}``: the claims registry as a table, one row per landing row."""

        def run(self):
            from stumplib.book import registry

            return [_table(registry.RULE_HEADER, registry.registry_rows(), [18, 4, 32, 12, 22, 12])]

    class SeedAudit(SphinxDirective):
        """``{seed-audit}``: the committed seed audit (``scripts/SEED_AUDIT.json``)."""

        def run(self):
            from stumplib.book import audit as audit_mod
            from stumplib.book import runs

            self.env.note_dependency(str(runs.run_file(runs.AUDIT_NAME)))
            audit = runs.read_audit()
            if not audit:
                return [nodes.paragraph(text="No seed audit is committed: no claim is audited.")]
            seeds = ", ".join(str(k) for k in audit.get("seeds", []))
            para = nodes.paragraph()
            para += nodes.Text(
                f"Audited commit {audit.get('commit', '?')}, profile "
                f"{audit.get('profile', '?')}, seeds {seeds}; "
                f"chapters {', '.join(audit.get('chapters_done', [])) or 'none'}; "
                f"{audit.get('duration_s', float('nan')) / 60:.0f} minutes on "
                f"{audit.get('machine', '?')} ({audit.get('finished', '?')}). Command: ")
            # a literal: typographic quotes would print "--seeds" with an en dash, which a shell
            # does not take
            para += nodes.literal(text=str(audit.get("command", "?")))
            for r in audit.get("reruns", []):
                para += nodes.Text(f". Rerun of {', '.join(r.get('chapters_done', []))} after a "
                                   f"change, at commit {r.get('commit', '?')}: ")
                para += nodes.literal(text=str(r.get("command", "?")))
            para += nodes.Text(".")
            return [para, _table(audit_mod.AUDIT_HEADER, audit_mod.audit_rows(audit),
                                 [22, 26, 8, 10, 10, 10, 8])]

    class LibraryCalls(SphinxDirective):
        """``{library-calls}``: on a notebook page, the ``stumplib`` functions its code calls, each
        linked to its entry on the reference page (:func:`library_calls`)."""

        def run(self):
            path = self.env.doc2path(self.env.docname)
            calls = library_calls(path)
            if not calls:
                return [nodes.paragraph(text="This page calls no stumplib function.")]
            lines = [f"- {{py:mod}}`{m}`: " + ", ".join(f"{{py:obj}}`~{m}.{n}`" for n in names)
                     for m, names in calls.items()]
            from docutils.statemachine import StringList

            box = nodes.container(classes=["library-calls"])
            self.state.nested_parse(StringList(lines, source=str(path)), self.content_offset, box)
            return [box]
    class ClaimsTally(SphinxDirective):
        """``{claims-tally}``: how many claims hold, fail, are partly met or undecided, counted
        when the page is written (:func:`stumplib.book.sphinxext.claims_data.resolve_tally`)."""

        def run(self):
            from stumplib.book.sphinxext.claims_data import claims_tally_node

            return [claims_tally_node()]
    return ClaimsRules, SeedAudit, LibraryCalls, ClaimsTally

