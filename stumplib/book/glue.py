"""Glue: the numbers, figures and verdicts a chapter hands to its pages (``myst_nb.glue``).

- :func:`glue_value` glues one value (numbers as plain Python numbers; ``text=`` also glues a
  plain-notation form); :func:`glue_estimate` an estimate with its interval (``name``,
  ``name_lo``, ``name_hi``); :func:`glue_verdict` a :class:`~stumplib.book.verdicts.Verdict` under
  the four names the chapter and the landing page cite; :func:`typeset_reason` writes a reason by
  hand in the book's symbols.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from stumplib.core.stats import Estimate

if TYPE_CHECKING:
    from stumplib.book.verdicts import Verdict


def _glue(name: str, value: Any) -> None:
    from myst_nb import glue

    glue(name, value, display=False)


def glue_value(name: str, value: Any, *, text: str | None = None) -> Any:
    """Glue one value (numbers as plain Python floats/ints, so the page formats them); returns it.
    With ``text`` (a format specification such as ``".1e"``) a number is also glued as
    ``<name>_text``, formatted and written in plain notation (``2.4 × 10⁻⁴``,
    :func:`stumplib.book.typeset.number`): the page cites that where a format would print
    e-notation.
    A matplotlib figure is closed once glued and ``None`` is returned, so the cell does not show it a
    second time without its caption. A verdict or reason given as text (a name ending in
    ``_verdict`` or ``_reason``) is typeset in the book's symbols
    (:func:`stumplib.book.typeset.typeset`), as a :class:`~stumplib.book.verdicts.Verdict` is.

    Parameters
    ----------
    name : str
        The glue name the page refers to.
    value : object
        The value to glue: a number, text, figure or any object ``myst_nb.glue`` accepts.
    text : str or None
        The format of ``<name>_text`` (``None``: no text form); only for a real number.

    Returns
    -------
    object or None
        The glued value (numpy scalars converted to Python numbers, verdict text typeset), or
        ``None`` for a matplotlib figure.
    """
    if isinstance(value, (np.floating, np.integer)):
        value = value.item()
    if isinstance(value, str) and name.endswith(("_verdict", "_reason")):
        from stumplib.book.typeset import typeset

        value = typeset(value)
    is_figure = type(value).__name__ == "Figure" and type(value).__module__.startswith(
        "matplotlib")
    if is_figure:  # shown 1:1 in the column, its text at its point size
        from stumplib.book.style import fit_column

        fit_column(value)
    _glue(name, value)
    if text is not None:
        from stumplib.book.typeset import number

        if not isinstance(value, (int, float)) or isinstance(value, bool):
            raise TypeError(f"text= needs a real number; {name} is {type(value).__name__}")
        _glue(f"{name}_text", number(float(value), text))
    if is_figure:
        import matplotlib.pyplot as plt

        plt.close(value)  # shown once, where the page places the glued figure with its caption
        return None  # a cell ending in glue_value(name, fig) must not display the figure again
    return value


def glue_estimate(name: str, est: Estimate) -> Estimate:
    """Glue an estimate as ``name`` (value), ``name_lo`` and ``name_hi``; returns it.

    Parameters
    ----------
    name : str
        The glue name of the value; the interval's ends get the suffixes ``_lo`` and ``_hi``.
    est : Estimate
        The estimate with its interval (``value``, ``lo``, ``hi``), glued as floats.

    Returns
    -------
    Estimate
        ``est`` itself.
    """
    glue_value(name, float(est.value))
    glue_value(f"{name}_lo", float(est.lo))
    glue_value(f"{name}_hi", float(est.hi))
    return est


def glue_verdict(claim: str, v: "Verdict", *, why: str | None = None) -> "Verdict":
    """Glue a :class:`~stumplib.book.verdicts.Verdict` for the claim ``claim`` under four names:
    ``<claim>_status`` (the plain word: holds, fails, undecided, partly; the landing page renders its
    badge from it), ``<claim>_verdict`` (``"Holds: sentence"``, for the chapter's verdict box),
    ``<claim>_reason`` (the sentence alone) and ``<claim>_why`` (the landing page's one-line reason:
    ``why``, or the sentence shortened by :func:`stumplib.book.verdicts.short_reason`). Returns ``v``.

    Parameters
    ----------
    claim : str
        The claim's name, the prefix of the glue names.
    v : Verdict
        The verdict; anything else raises ``TypeError``.
    why : str, optional
        The landing page's reason, where the shortened sentence would not say it.

    Returns
    -------
    Verdict
        ``v`` itself.
    """
    from stumplib.book.verdicts import Verdict, short_reason

    if not isinstance(v, Verdict):
        raise TypeError(f"v must be a stumplib.book.verdicts.Verdict; got {type(v).__name__}")
    glue_value(f"{claim}_status", v.status)
    glue_value(f"{claim}_verdict", v.text)
    glue_value(f"{claim}_reason", v.sentence)
    glue_value(f"{claim}_why", typeset_reason(why) if why is not None else short_reason(v.sentence))
    return v


def typeset_reason(text: str) -> str:
    """A reason written by hand, in the book's symbols (:func:`stumplib.book.typeset.typeset`),
    ending with a full stop as the shortened verdict sentences do.

    Parameters
    ----------
    text : str
        The reason.

    Returns
    -------
    str
        The typeset reason.
    """
    from stumplib.book.typeset import typeset

    text = typeset(text).rstrip()
    return text if text.endswith((".", "…")) else text + "."


