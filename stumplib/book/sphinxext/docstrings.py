"""Docstrings on the reference page: numpy sections rendered as definition lists, around napoleon."""
from __future__ import annotations

import re

_SECTIONS = {"parameters", "other parameters", "attributes", "returns", "yields", "raises"}


_TYPEISH = re.compile(
    r"^(?:\(|int\b|float|str\b|bool|dict|list|tuple|sequence|array|ndarray|numpy|np\.|torch|"
    r"tensor|Tensor|Estimate|callable|Callable|mapping|Mapping|optional|Any|Path|None|"
    r"matplotlib|iterable|object|bytes|complex|[A-Z]\w*(?:\.\w+)*(?:[\s,\[]|$)|\w+(?:\.\w+)+)")


_NAMES = re.compile(r"^\*{0,2}\w+(?:, \*{0,2}\w+)*$")


def _split_type(text: str) -> tuple[str, str]:
    """``"torch.Tensor, shape ``(n,)``: the estimate"`` -> (type, description); a text that does
    not start like a type is all description."""
    if not _TYPEISH.match(text):
        return "", text
    depth, i = 0, 0
    while i < len(text):
        if text.startswith("``", i):
            j = text.find("``", i + 2)
            i = len(text) if j < 0 else j + 2
            continue
        c = text[i]
        depth += c in "([{"
        depth -= c in ")]}"
        if depth == 0 and text.startswith(": ", i):
            return text[:i].strip(), text[i + 2:].strip()
        i += 1
    words = text.split()
    return (text, "") if len(words) <= 8 and not text.rstrip().endswith(".") else ("", text)


def numpy_sections(lines: list[str]) -> list[str]:
    """Rewrite one-line entries of a docstring's numpy sections into the form napoleon parses.

    ``name : description`` (a description where napoleon expects a type: it would render it
    bold, with its ``code`` shown as literal backticks), ``name : type: description`` and, under
    Returns, ``type: description`` on one line or a sentence wrapped at the section's indentation
    (napoleon makes one return value per line) become ``name : type`` with the description
    indented below. Proper numpy entries are kept as they are.

    Parameters
    ----------
    lines : list of str
        The docstring's lines (autodoc's ``autodoc-process-docstring`` list).

    Returns
    -------
    list of str
        The rewritten lines.
    """
    out: list[str] = []
    i, n = 0, len(lines)
    while i < n:
        line = lines[i]
        head = line.strip().lower()
        if (head in _SECTIONS and i + 1 < n and set(lines[i + 1].strip()) == {"-"}
                and len(lines[i + 1].strip()) >= 3):
            base = len(line) - len(line.lstrip())
            out += [line, lines[i + 1]]
            i += 2
            entries: list[tuple[str, list[str]]] = []
            while i < n and (not lines[i].strip() or len(lines[i]) - len(lines[i].lstrip()) >= base):
                cur = lines[i]
                if cur.strip() and i + 1 < n and set(lines[i + 1].strip()) == {"-"}:
                    break  # the next section
                ind = len(cur) - len(cur.lstrip())
                if cur.strip() and ind == base:
                    entries.append((cur.strip(), []))
                elif entries:
                    entries[-1][1].append(cur.strip())
                else:
                    out.append(cur)
                i += 1
            body = _rewrite_entries(entries, head, " " * base)
            if head in ("returns", "yields") and body and all(
                    b.startswith(" " * base) and not b[base:].startswith(" ") for b in body if b):
                # descriptions only (no type): one line, which napoleon shows in bold as a type;
                # :func:`unbold_returns` takes the bold off after napoleon
                body = [" " * base + " ".join(b.strip() for b in body if b)]
            out += body
            out.append("")
            continue
        out.append(line)
        i += 1
    return out


def _rewrite_entries(entries, section: str, pad: str) -> list[str]:
    if section in ("returns", "yields"):
        merged: list[tuple[str, list[str]]] = []
        for first, rest in entries:  # a wrapped sentence continues the previous value
            if merged and not merged[-1][1] and not _TYPEISH.match(first) and not (
                    " : " in first):
                merged[-1] = (merged[-1][0] + " " + first, rest)
            else:
                merged.append((first, rest))
        entries = merged
    out = []
    for first, rest in entries:
        rest = [r for r in rest if r]
        if section in ("returns", "yields", "raises") and " : " not in first:
            typ, desc = _split_type(first)
            if section == "raises":
                typ, desc = (first, "") if not rest else (first, "")
        else:
            name, _, tail = first.partition(" : ")
            if not tail or not _NAMES.match(name) or " : " in tail:  # not one entry: as it is
                out.append(pad + first)
                out += [pad + "    " + r for r in rest]
                continue
            typ, desc = _split_type(tail)
            typ = f"{name} : {typ}" if typ else name
        if not re.search(r"[|*_`]``|``[|*_]", typ):  # italics hold no nested code markup
            typ = typ.replace("``", "")
        body = ([desc] if desc else []) + rest
        if typ:
            out.append(pad + typ)
            out += [pad + "    " + b for b in body]
        else:
            out += [pad + b for b in body]
    return out


_BOLD_RETURNS = re.compile(r"^(\s*:returns:\s*)\*\*(.*?)\*\*(?: \((.*)\))?\s*$")


def unbold_returns(lines: list[str]) -> list[str]:
    """After napoleon: a Returns description it took for a type (``:returns: **text**``, where
    ``code`` inside the bold shows its backticks) as plain text.

    Parameters
    ----------
    lines : list of str
        napoleon's reStructuredText lines.

    Returns
    -------
    list of str
        The lines, such returns unbolded.
    """
    def plain(m: re.Match) -> str:
        text, desc = m.group(2), m.group(3)
        if "``" not in text and " " not in text.strip():
            return m.group(0)  # a type: keep it
        return m.group(1) + text + (f": {desc}" if desc else "")

    return [_BOLD_RETURNS.sub(plain, line) for line in lines]


def _process_docstring(app, what, name, obj, options, lines) -> None:
    lines[:] = numpy_sections(list(lines))


def _after_napoleon(app, what, name, obj, options, lines) -> None:
    lines[:] = unbold_returns(list(lines))



def connect(app) -> None:
    """Connect the numpy-section handling around napoleon (a book without autodoc: nothing).

    Parameters
    ----------
    app : sphinx.application.Sphinx
        The application being set up.
    """
    if "autodoc-process-docstring" in app.events.events:
        app.connect("autodoc-process-docstring", _process_docstring, priority=400)  # before napoleon
        app.connect("autodoc-process-docstring", _after_napoleon, priority=600)  # after it
