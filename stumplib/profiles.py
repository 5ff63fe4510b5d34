"""Run profiles shared by all chapters.

- ``smoke``: seconds; the test suite executes every chapter with it.
- ``quick``: the default; the whole book builds on a 2-core CPU in minutes.
- ``full``: paper scale, meant for a GPU.

The parameters cell of every chapter reads ``profile = os.environ.get("STUMPBOOK_PROFILE", "quick")``,
so ``STUMPBOOK_PROFILE=full jupyter-book build .`` builds the whole site at paper scale, and
``papermill ... -p profile full`` overrides it for one chapter.
"""
from __future__ import annotations

from typing import Any

import torch

from .device import resolve_device
from .validation import check_choice

__all__ = ["PROFILES", "ENV_VAR", "resolve_profile", "setup_chapter"]

PROFILES = ("smoke", "quick", "full")
ENV_VAR = "STUMPBOOK_PROFILE"


def resolve_profile(profile: Any) -> str:
    """Validate a profile name (one of :data:`PROFILES`)."""
    return check_choice(f"profile (or the environment variable {ENV_VAR})", profile, PROFILES)


def _inline_figures() -> None:
    """Inside a Jupyter kernel, render figures inline (PNG) whatever ``MPLBACKEND`` says: a
    non-inline backend would glue figures as the text ``<Figure size ...>`` into the book."""
    try:
        from IPython import get_ipython
    except ImportError:  # pragma: no cover - IPython ships with the notebook stack
        return
    ip = get_ipython()
    if ip is not None and getattr(ip, "kernel", None) is not None:
        ip.run_line_magic("matplotlib", "inline")


def setup_chapter(profile: Any, device: Any, seed: Any = 0) -> tuple[str, torch.device]:
    """Validate the parameters every chapter shares, apply the book style, and report them.

    Returns
    -------
    (profile, device)
    """
    from . import style
    from .validation import check_int

    profile = resolve_profile(profile)
    dev = resolve_device(device)
    check_int("seed", seed, minimum=0)
    _inline_figures()
    style.use()
    torch.set_default_dtype(torch.float64)
    print(f"profile={profile}  device={dev}  torch={torch.__version__}  seed={seed}")
    return profile, dev
