"""Pre-execution: the chapters executed into the build's execution cache, several at a time,
before ``jupyter-book build`` reuses them (CI runs the chapters two at a time this way)."""
from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from stumplib.book.sphinxext.stamp import write_stamp


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

