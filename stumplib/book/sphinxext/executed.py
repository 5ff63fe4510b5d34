"""Executed notebooks for the reader: a link under every notebook page's title, and the executed
notebooks copied into the site as ``_executed/<docname>.ipynb`` (Jupyter Book's download button
serves the committed notebook, which has no outputs)."""
from __future__ import annotations

import shutil
from pathlib import Path

from sphinx.util import logging

from stumplib.book.sphinxext.stamp import cache_path, is_notebook, read_json, uses_cache

logger = logging.getLogger(__name__)

#: folder of the site that holds the executed notebooks
EXECUTED_DIR = "_executed"


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

    if app.builder.format != "html" or not is_notebook(app.env, docname):
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
        if not is_notebook(app.env, d):
            continue
        f = src / f"{d}.ipynb"
        if f.is_file():
            out = dst / f"{d}.ipynb"
            out.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(f, out)
            if uses_cache(app) and not _has_outputs(out):
                _outputs_from_cache(cache_path(app), Path(app.env.doc2path(d)), out)
            n += 1
    logger.info(f"stumpbook: copied {n} executed notebooks to {dst}")


def _has_outputs(path: Path) -> bool:
    nb = read_json(path) or {}
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



def connect(app) -> None:
    """Connect the link under each notebook page's title and the copy of the executed notebooks.

    Parameters
    ----------
    app : sphinx.application.Sphinx
        The application being set up.
    """
    app.connect("doctree-resolved", _add_executed_link)
    app.connect("build-finished", _copy_executed)
