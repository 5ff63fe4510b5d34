"""Sphinx extension of the book build: what the execution cache must not miss.

The book executes its notebooks with myst-nb's execution cache (``execute_notebooks: cache`` in
``_config.yml``, a jupyter-cache database in ``_build/.jupyter_cache``). That cache keys on the code
cells of a notebook only, and Sphinx re-reads (so re-executes) a notebook only when its file
changed. This extension adds the two things neither knows about:

1. **What the code cells import and read from the environment.** A *stamp* of
   :func:`stumplib.core.book.code_version` (a hash of every ``stumplib`` source file) and of the
   ``STUMPBOOK_PROFILE`` and ``STUMPBOOK_CACHE`` environment variables is kept next to the cache
   (``<cache>.stamp.json``) and in the pickled Sphinx environment. When the stamp of this build
   differs from the cache's, the cache is cleared; when it differs from the environment's, every
   notebook is marked outdated (``env-get-outdated``), so every notebook is re-read and therefore
   re-executed. A failed build does not store its stamp in the environment, so the next build
   retries every notebook (those that did execute are then reused from the cache).
2. **Cross-document glue.** A page that glues values from a notebook (``{glue:text}`chapter::key```,
   the landing page's claims table) only reads the notebook's glue store (``*.glue.json``) when the
   page is written. Whenever a notebook is re-read, every page that glues from it is re-read too,
   so it never shows values of an older execution.

3. **Executed notebooks for the reader.** Jupyter Book's download button serves the committed
   notebook, which has no outputs. Every notebook page gets a link "Download the executed notebook
   (with outputs)" under its title, and at the end of the build the executed notebooks that
   myst-nb wrote to ``_build/jupyter_execute`` are copied into the site as
   ``_executed/<docname>.ipynb``, where the link points.

4. **Claims as data.** At the end of the build the landing page's claims (the rows of
   :data:`stumplib.core.claims.REGISTRY`) are written into the site root as ``claims.json`` and
   ``claims.csv`` (:data:`CLAIM_FIELDS`; :func:`claims_rows`, :func:`write_claims`), from the glued
   values of the executed notebooks. ``python -m stumplib.core.book compare A B`` compares two.

At the end of every build the extension logs which notebooks were executed in this build (with
their run times) and which were reused from the cache, e.g.::

    stumpbook: executed chapters/01_setup (12.3 s); reused from cache: chapters/02_...

4. **The rules before the numbers.** Two directives render the claims registry
   (:mod:`stumplib.core.claims`) at build time on the page "How each claim is judged":
   ``{claims-rules}`` (claim, statistic, target, tolerance, rule) and ``{seed-audit}`` (the
   committed seed audit: status per seed, agreement, coverage of the intervals).

Enable it with ``sphinx: extra_extensions: [stumplib.core.sphinxext]`` in ``_config.yml``.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import time
from pathlib import Path
from typing import Any

from sphinx.util import logging

logger = logging.getLogger(__name__)

STAMP_ENV_ATTR = "stumpbook_exec_stamp"
#: folder of the site that holds the executed notebooks
EXECUTED_DIR = "_executed"
GLUE_REFS_ENV_ATTR = "stumpbook_glue_refs"


def build_stamp() -> dict[str, str]:
    """What an execution depends on besides the notebook's code cells.

    Returns
    -------
    dict of str
        ``"code_version"`` (:func:`stumplib.core.book.code_version`, a hash of every ``stumplib``
        source file), ``"profile"`` (``$STUMPBOOK_PROFILE``, ``""`` when unset) and ``"cache"``
        (``"on"`` or ``"off"``, from :func:`stumplib.core.book.cache_enabled`).
    """
    from stumplib.core import book# the book's own code_version(); imported here, not at Sphinx start-up

    return {
        "code_version": book.code_version(),
        "profile": os.environ.get(book.ENV_VAR, ""),
        "cache": "on" if book.cache_enabled() else "off",
        # the chapters read the committed seed audit (claims.glue_seed_agreement)
        "seed_audit": _file_digest(Path(__file__).resolve().parents[2] / "scripts"
                                   / "SEED_AUDIT.json"),
    }


def _file_digest(path: Path) -> str:
    """A short hash of a file's bytes (``"none"`` when it does not exist)."""
    import hashlib

    return hashlib.sha256(path.read_bytes()).hexdigest()[:16] if path.is_file() else "none"


def _cache_path(app) -> Path:
    cfg = getattr(app.env, "mystnb_config", None)
    p = getattr(cfg, "execution_cache_path", "") if cfg is not None else ""
    return Path(p) if p else Path(app.outdir).parent / ".jupyter_cache"


def _stamp_file(cache: Path) -> Path:
    return cache.with_name(cache.name + ".stamp.json")


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def _uses_cache(app) -> bool:
    cfg = getattr(app.env, "mystnb_config", None)
    return getattr(cfg, "execution_mode", None) == "cache"


def write_stamp(cache: str | os.PathLike) -> Path:
    """Store this process's :func:`build_stamp` as the stamp of the execution cache ``cache``, so
    that the next build (same library, profile and cache setting) keeps the cache's outputs.

    Parameters
    ----------
    cache : the jupyter-cache folder (``_build/.jupyter_cache``).

    Returns
    -------
    Path : the stamp file.
    """
    sf = _stamp_file(Path(cache))
    sf.parent.mkdir(parents=True, exist_ok=True)
    tmp = sf.with_suffix(".tmp")
    tmp.write_text(json.dumps(build_stamp(), indent=1))
    os.replace(tmp, sf)
    return sf


def preexecute(notebooks: list[str | os.PathLike], cache: str | os.PathLike = "_build/.jupyter_cache",
               *, timeout: int = 1800) -> dict[str, Any]:
    """Execute notebooks into the build's execution cache, as many at a time as there are cores
    (jupyter-cache's ``local-parallel`` executor, each in its own folder as the build would), then
    stamp the cache (:func:`write_stamp`): the following ``jupyter-book build`` reuses their
    outputs and executes nothing. A notebook that fails is not cached; the build then executes it
    and reports the error as usual.

    Parameters
    ----------
    notebooks : the notebooks, longest first (the pool starts them in this order).
    cache : the execution cache of the build (``_build/.jupyter_cache`` for the default build folder).
    timeout : seconds per cell.

    Returns
    -------
    dict : ``{"succeeded": [...], "excepted": [...], "seconds": wall time}``.
    """
    from jupyter_cache import get_cache
    from jupyter_cache.executors import load_executor

    t0 = time.time()
    jc = get_cache(str(cache))
    for nb in notebooks:
        jc.add_nb_to_project(str(Path(nb).resolve()))
    write_stamp(cache)  # before executing: the book code the notebooks import is this one
    res = load_executor("local-parallel", cache=jc).run_and_cache(timeout=timeout, allow_errors=False)
    return {"succeeded": list(res.succeeded), "excepted": list(res.excepted),
            "seconds": time.time() - t0}


def _builder_inited(app) -> None:
    """Compare this build's stamp with the execution cache's; clear the cache when they differ."""
    app._stumpbook_t0 = time.time()
    app._stumpbook_stamp = stamp = build_stamp()
    if not _uses_cache(app):
        return
    cache = _cache_path(app)
    sf = _stamp_file(cache)
    old = _read_json(sf)
    if old != stamp:
        if cache.exists():
            why = ", ".join(f"{k} {old.get(k)!r} -> {v!r}" for k, v in stamp.items()
                            if old.get(k) != v) if isinstance(old, dict) else "no stamp"
            logger.info(f"stumpbook: clearing the execution cache {cache} ({why})")
            shutil.rmtree(cache)
        write_stamp(cache)


def _is_notebook(env, docname: str) -> bool:
    try:
        return str(env.doc2path(docname)).endswith(".ipynb")
    except Exception:  # noqa: BLE001 - a doc Sphinx no longer knows
        return False


def _env_get_outdated(app, env, added, changed, removed) -> list[str]:
    """Every notebook when the stamp changed; every page gluing from a notebook that is re-read."""
    stamp = getattr(app, "_stumpbook_stamp", None) or build_stamp()
    old = getattr(env, STAMP_ENV_ATTR, None)
    extra: set[str] = set()
    if old is not None and old != stamp:
        extra = {d for d in env.found_docs if _is_notebook(env, d)}
        why = ", ".join(k for k in stamp if old.get(k) != stamp[k])
        logger.info(f"stumpbook: {why} changed: re-executing {len(extra)} notebooks")
    # stored in the environment, which Sphinx pickles only once every document was read
    setattr(env, STAMP_ENV_ATTR, stamp)
    reread = set(added) | set(changed) | extra
    refs: dict[str, set[str]] = getattr(env, GLUE_REFS_ENV_ATTR, {})
    followers = {doc for doc, srcs in refs.items() if srcs & reread and doc in env.found_docs}
    if followers - reread:
        logger.info("stumpbook: re-reading pages that glue from re-read notebooks: "
                    + ", ".join(sorted(followers - reread)))
    return sorted(extra | followers)


def _doctree_read(app, doctree) -> None:
    """Record which documents this one glues from (cross-document glue references)."""
    from myst_nb.ext.glue.utils import PendingGlueReference

    env = app.env
    srcs = {n.refdoc for n in doctree.findall(PendingGlueReference)
            if getattr(n, "refdoc", None) and n.refdoc != env.docname}
    refs = getattr(env, GLUE_REFS_ENV_ATTR, None)
    if refs is None:
        refs = {}
        setattr(env, GLUE_REFS_ENV_ATTR, refs)
    if srcs:
        refs[env.docname] = srcs
    else:
        refs.pop(env.docname, None)


def _env_purge_doc(app, env, docname) -> None:
    getattr(env, GLUE_REFS_ENV_ATTR, {}).pop(docname, None)


def _env_merge_info(app, env, docnames, other) -> None:
    refs = getattr(env, GLUE_REFS_ENV_ATTR, None)
    if refs is None:
        refs = {}
        setattr(env, GLUE_REFS_ENV_ATTR, refs)
    for d in docnames:
        if d in getattr(other, GLUE_REFS_ENV_ATTR, {}):
            refs[d] = getattr(other, GLUE_REFS_ENV_ATTR)[d]


def _env_before_read_docs(app, env, docnames) -> None:
    app._stumpbook_read = list(docnames)


def _build_finished(app, exception) -> None:
    """Log which notebooks this build executed (with run times) and which came from the cache."""
    if exception is not None:
        return
    try:
        from myst_nb.sphinx_ import NbMetadataCollector
    except ImportError:  # pragma: no cover
        return
    t0 = getattr(app, "_stumpbook_t0", 0.0)
    ran, reused = [], []
    for d in getattr(app, "_stumpbook_read", []):
        try:
            data = NbMetadataCollector.get_exec_data(app.env, d)
        except KeyError:
            data = None
        if not data:
            continue
        if (data.get("mtime") or 0) >= t0 and data.get("method") != "off":
            ran.append(f"{d} ({data.get('runtime') or 0:.1f} s)")
        else:
            reused.append(d)
    logger.info("stumpbook: executed " + (", ".join(ran) or "no notebook")
                + "; reused from cache: " + (", ".join(reused) or "none")
                + f"; build took {time.time() - t0:.1f} s")


def executed_notebook_href(docname: str) -> str:
    """Relative URL, from the page of ``docname``, of its executed notebook in the site.

    Parameters
    ----------
    docname : str
        The Sphinx document name, ``/``-separated and without suffix (e.g.
        ``"chapters/01_setup"``).

    Returns
    -------
    str
        ``../`` once per folder level of ``docname``, then ``_executed/<docname>.ipynb``
        (:data:`EXECUTED_DIR`).
    """
    return "../" * docname.count("/") + f"{EXECUTED_DIR}/{docname}.ipynb"


def _add_executed_link(app, doctree, docname: str) -> None:
    """Put a link to the executed notebook under the title of every notebook page (HTML only)."""
    from docutils import nodes

    if app.builder.format != "html" or not _is_notebook(app.env, docname):
        return
    href = executed_notebook_href(docname)
    html = (f'<p class="executed-notebook"><a href="{href}" download>Download the executed '
            f'notebook</a> (with its outputs, as this page was built)</p>')
    raw = nodes.raw("", html, format="html")
    section = next(iter(doctree.findall(nodes.section)), None)
    if section is not None and section.children and isinstance(section[0], nodes.title):
        section.insert(1, raw)
    else:
        doctree.insert(0, raw)


def _copy_executed(app, exception) -> None:
    """Copy every executed notebook (``_build/jupyter_execute/**.ipynb``) into the site."""
    if exception is not None or app.builder.format != "html":
        return
    src = Path(app.outdir).parent / "jupyter_execute"
    dst = Path(app.outdir) / EXECUTED_DIR
    n = 0
    for d in sorted(app.env.found_docs):
        if not _is_notebook(app.env, d):
            continue
        f = src / f"{d}.ipynb"
        if f.is_file():
            out = dst / f"{d}.ipynb"
            out.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(f, out)
            if _uses_cache(app) and not _has_outputs(out):
                _outputs_from_cache(_cache_path(app), Path(app.env.doc2path(d)), out)
            n += 1
    logger.info(f"stumpbook: copied {n} executed notebooks to {dst}")


def _has_outputs(path: Path) -> bool:
    nb = _read_json(path) or {}
    return any(c.get("outputs") for c in nb.get("cells", []) if c.get("cell_type") == "code")


def _outputs_from_cache(cache: Path, source: Path, out: Path) -> None:
    """Write ``source`` with the outputs of its execution-cache record to ``out`` (myst-nb leaves
    ``jupyter_execute`` without outputs for a notebook whose record was made before the build,
    e.g. by :func:`preexecute`)."""
    import nbformat
    from jupyter_cache import get_cache

    try:
        _, nb = get_cache(str(cache)).merge_match_into_notebook(nbformat.read(source, as_version=4))
    except Exception as exc:  # noqa: BLE001 - no record: keep what myst-nb wrote
        logger.warning(f"stumpbook: no cached outputs for {source.name} ({exc})")
        return
    nbformat.write(nb, out)


# ------------------------------------------------------------------ docstrings on the reference page
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


# ------------------------------------------------------------------ claims as data
#: the columns of ``claims.json`` / ``claims.csv``, in order
CLAIM_FIELDS = ("key", "paper", "claim", "chapter", "status", "statistic", "estimate", "lower",
                "upper", "target", "tolerance", "seed_agreement", "verdict", "profile",
                "code_version")


def _plain(value: str) -> Any:
    """A glued ``text/plain`` payload as a Python value (``"'holds'"`` -> ``"holds"``)."""
    import ast

    try:
        return ast.literal_eval(value)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return value


def _output_value(o: Any) -> Any:
    data = (o or {}).get("data") or {}
    txt = next((v for k, v in data.items() if k.endswith("text/plain")), None)
    if txt is None:
        return None
    return _plain("".join(txt) if isinstance(txt, list) else txt)


def glued_values(notebook: str | os.PathLike) -> dict[str, Any]:
    """The values an executed notebook glued, ``name -> value`` (their ``text/plain`` form read back
    as numbers or strings; a figure or a missing file gives nothing).

    myst-nb keeps a build's glued values in a store next to the executed notebook
    (``<name>.glue.json``: name -> output); it is read when present, else the notebook's outputs
    (papermill records glued values there).

    Parameters
    ----------
    notebook : path of an executed ``.ipynb`` (its store, if any, beside it).

    Returns
    -------
    dict
        Glue name to value.
    """
    nb_path = Path(notebook)
    out: dict[str, Any] = {}
    store = _read_json(nb_path.with_suffix(".glue.json"))
    if isinstance(store, dict):
        for name, o in store.items():
            v = _output_value(o)
            if v is not None:
                out[name] = v
        return out
    nb = _read_json(nb_path) or {}
    for cell in nb.get("cells", []):
        for o in cell.get("outputs", []) or []:
            name = (o.get("metadata") or {}).get("scrapbook", {}).get("name")
            v = _output_value(o) if name is not None else None
            if v is not None:
                out[name] = v
    return out


def _number(v: Any) -> float | str:
    try:
        x = float(v)
    except (TypeError, ValueError):
        return ""
    return x if x == x else ""  # NaN: an empty field


def claims_rows(executed: str | os.PathLike, *, profile: str = "", code_version: str = "",
                registry=None) -> list[dict[str, Any]]:
    """One row per registered claim, from the executed notebooks under ``executed``.

    Parameters
    ----------
    executed : folder holding the executed notebooks as ``<chapter>.ipynb`` (the site's
        ``_executed`` or ``_build/jupyter_execute``).
    profile, code_version : the build's profile and :func:`stumplib.core.book.code_version`.
    registry : the claims (default :data:`stumplib.core.claims.REGISTRY`).

    Returns
    -------
    list of dict
        Rows with the keys :data:`CLAIM_FIELDS`; a value not glued is an empty field (``""``),
        never an error; numbers are floats.
    """
    if registry is None:
        from stumplib.core.claims import REGISTRY as registry
    cache: dict[str, dict[str, Any]] = {}
    rows = []
    for c in registry:
        if c.chapter not in cache:
            cache[c.chapter] = glued_values(Path(executed) / f"{c.chapter}.ipynb")
        g = cache[c.chapter]

        def get(suffix: str) -> Any:
            return g.get(f"{c.key}_{suffix}", "")

        num = getattr(c, "key_number", f"{c.key}_estimate")  # the number the row shows

        rows.append({"key": c.key, "paper": c.paper, "claim": c.claim, "chapter": c.chapter,
                     "status": get("status"), "statistic": c.statistic,
                     "estimate": _number(g.get(num, "")), "lower": _number(g.get(f"{num}_lo", "")),
                     "upper": _number(g.get(f"{num}_hi", "")), "target": c.target,
                     "tolerance": c.tolerance, "seed_agreement": get("seed_agreement"),
                     "verdict": get("verdict"), "profile": profile,
                     "code_version": code_version})
    return rows


def write_claims(rows: list[dict[str, Any]], outdir: str | os.PathLike) -> tuple[Path, Path]:
    """Write ``rows`` as ``claims.json`` (a list of objects) and ``claims.csv`` into ``outdir``.

    Parameters
    ----------
    rows : :func:`claims_rows`' output.
    outdir : the site root (``_build/html``).

    Returns
    -------
    (Path, Path)
        The JSON and CSV files.
    """
    import csv

    out = Path(outdir)
    out.mkdir(parents=True, exist_ok=True)
    js, cs = out / "claims.json", out / "claims.csv"
    js.write_text(json.dumps(rows, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    with cs.open("w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=list(CLAIM_FIELDS), extrasaction="ignore")
        w.writeheader()
        w.writerows(rows)
    return js, cs


def _write_claims(app, exception) -> None:
    """At the end of an HTML build: the claims of the executed notebooks into the site root."""
    if exception is not None or app.builder.format != "html":
        return
    site = Path(app.outdir)
    executed = site.parent / "jupyter_execute"  # myst-nb's glue stores, beside the notebooks
    if not executed.is_dir():
        executed = site / EXECUTED_DIR
    stamp = getattr(app, "_stumpbook_stamp", None) or build_stamp()
    from stumplib.core import book

    profile = stamp.get("profile") or "quick"
    try:
        profile = book.resolve_profile(profile)
    except ValueError:
        pass
    rows = claims_rows(executed, profile=profile, code_version=stamp.get("code_version", ""))
    js, _ = write_claims(rows, site)
    logger.info(f"stumpbook: wrote {len(rows)} claims to {js} and claims.csv")


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
    defines it (a re-export such as ``book.cached`` under :mod:`stumplib.core.cache`). Private
    names (``_x``) and calls of methods on objects (``cs.kept()``) are not listed; a cell that
    does not parse is skipped.

    Parameters
    ----------
    notebook : str or os.PathLike
        A ``.ipynb`` file.

    Returns
    -------
    dict[str, list[str]]
        ``{module: sorted names}``: the paper packages' modules first, then ``stumplib.plots``,
        then ``stumplib.core``, each group sorted (``{}`` for a file that is not a readable
        notebook).
    """
    import ast
    import importlib

    nb = _read_json(Path(notebook)) or {}
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
        return (2 if m.startswith("stumplib.core") else 1 if m.startswith("stumplib.plots") else 0, m)
    return {m: sorted(out[m]) for m in sorted(out, key=rank)}


def _directives():
    """The ``claims-rules``, ``seed-audit`` and ``library-calls`` directive classes (Sphinx
    imported lazily)."""
    from docutils import nodes
    from sphinx.util.docutils import SphinxDirective

    class ClaimsRules(SphinxDirective):
        """``{claims-rules}``: the claims registry as a table, one row per landing row."""

        def run(self):
            from stumplib.core import claims

            return [_table(claims.RULE_HEADER, claims.registry_rows(), [16, 6, 30, 12, 26, 10])]

    class SeedAudit(SphinxDirective):
        """``{seed-audit}``: the committed seed audit (``scripts/SEED_AUDIT.json``)."""

        def run(self):
            from stumplib.core import claims

            self.env.note_dependency(str(claims.AUDIT_FILE))
            audit = claims.read_audit()
            if not audit:
                return [nodes.paragraph(text="No seed audit is committed: no claim is audited.")]
            seeds = ", ".join(str(k) for k in audit.get("seeds", []))
            info = (f"Audited commit {audit.get('commit', '?')}, profile "
                    f"{audit.get('profile', '?')}, seeds {seeds}; "
                    f"chapters {', '.join(audit.get('chapters_done', [])) or 'none'}; "
                    f"{audit.get('duration_s', float('nan')) / 60:.0f} minutes on "
                    f"{audit.get('machine', '?')} ({audit.get('finished', '?')}). Command: "
                    f"{audit.get('command', '?')}")
            for r in audit.get("reruns", []):
                info += (f" Rerun of {', '.join(r.get('chapters_done', []))} after a change, at "
                         f"commit {r.get('commit', '?')}: {r.get('command', '?')}")
            return [nodes.paragraph(text=info),
                    _table(claims.AUDIT_HEADER, claims.audit_rows(audit),
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
    return ClaimsRules, SeedAudit, LibraryCalls


def setup(app) -> dict[str, Any]:
    """Register the extension with Sphinx: connect its handlers to the build events.

    The stamp check and cache clearing (``builder-inited``, after myst-nb's own handler), the
    outdated notebooks and the pages gluing from them (``env-get-outdated``, ``doctree-read``,
    ``env-purge-doc``, ``env-merge-info``, ``env-before-read-docs``), the link to the executed
    notebook under each notebook page's title (``doctree-resolved``), at ``build-finished`` the
    log of executed and reused notebooks, the copy of the executed notebooks into the site and
    the claims files, and the numpy-section handling of docstrings around napoleon
    (``autodoc-process-docstring``); the ``claims-rules`` and ``seed-audit`` directives of the
    judging page, and the ``library-calls`` directive of the chapters.

    Parameters
    ----------
    app : sphinx.application.Sphinx
        The Sphinx application being set up.

    Returns
    -------
    dict
        The extension's metadata: ``version``, parallel read and write safe, ``env_version``.
    """
    rules, audit, calls = _directives()
    app.add_directive("claims-rules", rules)
    app.add_directive("seed-audit", audit)
    app.add_directive("library-calls", calls)
    # after myst-nb's own builder-inited handler, which resolves the execution cache path
    app.connect("builder-inited", _builder_inited, priority=900)
    app.connect("env-get-outdated", _env_get_outdated)
    app.connect("env-before-read-docs", _env_before_read_docs)
    app.connect("doctree-read", _doctree_read)
    app.connect("env-purge-doc", _env_purge_doc)
    app.connect("env-merge-info", _env_merge_info)
    app.connect("build-finished", _build_finished)
    app.connect("doctree-resolved", _add_executed_link)
    app.connect("build-finished", _copy_executed)
    app.connect("build-finished", _write_claims, priority=600)  # after the copy (500)
    if "autodoc-process-docstring" in app.events.events:  # a book without autodoc has no such event
        app.connect("autodoc-process-docstring", _process_docstring, priority=400)  # before napoleon
        app.connect("autodoc-process-docstring", _after_napoleon, priority=600)  # after it
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True,
            "env_version": 1}
