"""The book's typesetting: numbers in plain notation and sentences in the book's symbols.

- :func:`number` formats a number without e-notation (``2.4 × 10⁻⁴``); :func:`plain_numbers`
  rewrites the e-notation numbers of a text;
- :func:`typeset` writes a sentence's ASCII spelling in symbols (``beta`` → β, ``>=`` → ≥,
  ``^-1`` → ⁻¹, ``m_n`` → mₙ); :func:`typeset_markdown` does so outside code spans and math;
- :func:`superscript`, :func:`subscript`, :func:`plural`.
"""
from __future__ import annotations

import math
import re

_SUP = dict(zip("0123456789+-=()n", "⁰¹²³⁴⁵⁶⁷⁸⁹⁺⁻⁼⁽⁾ⁿ"))


_SUB = dict(zip("0123456789+-=()aehijklmnoprstuvxβ", "₀₁₂₃₄₅₆₇₈₉₊₋₌₍₎ₐₑₕᵢⱼₖₗₘₙₒₚᵣₛₜᵤᵥₓᵦ"))


#: ASCII names of the book's Greek symbols
GREEK = {"alpha": "α", "beta": "β", "tau": "τ", "omega": "ω", "theta": "θ", "sigma": "σ",
         "lambda": "λ", "eta": "η", "Delta": "Δ", "delta": "δ"}


def superscript(text: str) -> str:
    """``text`` in Unicode superscripts (digits, signs, brackets, ``n``): ``"-1"`` -> ``"⁻¹"``.

    Parameters
    ----------
    text : str
        Characters to raise; a character without a superscript form raises ``ValueError``.

    Returns
    -------
    str
        The superscript string.
    """
    bad = [c for c in text if c not in _SUP]
    if bad:
        raise ValueError(f"no Unicode superscript for {''.join(bad)!r} in {text!r}")
    return "".join(_SUP[c] for c in text)


def subscript(text: str) -> str:
    """``text`` in Unicode subscripts where every character has one (``"l"`` -> ``"ₗ"``,
    ``"hi"`` -> ``"ₕᵢ"``), else unchanged (``"c"``: Unicode has no subscript c).

    Parameters
    ----------
    text : str
        The subscript's characters.

    Returns
    -------
    str
        Subscript characters, or ``text`` itself.
    """
    return "".join(_SUB[c] for c in text) if text and all(c in _SUB for c in text) else text


_EXP = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)[eE]([+-]?)(\d+)(?!\w|\.\d)")


def _plain_exponent(m: re.Match) -> str:
    mant, sign, exp = m.group(1), m.group(2), int(m.group(3))
    if exp == 0:
        return mant
    power = "10" + superscript(("-" if sign == "-" else "") + str(exp))
    return power if float(mant) == 1.0 else f"{mant} × {power}"


def plain_numbers(text: str) -> str:
    """``text`` with every number in e-notation written with a power of ten (``"2.4e-04"`` ->
    ``"2.4 × 10⁻⁴"``); the rest is unchanged.

    Parameters
    ----------
    text : str
        Any text (a formatted number, an interval, a table cell).

    Returns
    -------
    str
        The text as a reader reads it.
    """
    return _EXP.sub(_plain_exponent, text)


def number(x: float, fmt: str = ".3g") -> str:
    """A number in plain notation: ``format(x, fmt)`` with any exponent written as a power of ten
    (``1e+04`` -> ``10⁴``, ``1.281e+06`` -> ``1.281 × 10⁶``, ``nan`` -> ``NaN``).

    Parameters
    ----------
    x : float
        The number.
    fmt : str
        A format specification (``".3g"``, ``".2f"``).

    Returns
    -------
    str
        The number as a reader reads it.
    """
    if isinstance(x, float) and math.isnan(x):
        return "NaN"
    return plain_numbers(format(x, fmt)).replace("inf", "∞")


_RULES: tuple[tuple[re.Pattern, object], ...] = (
    (_EXP, _plain_exponent),
    (re.compile(r"(?<![A-Za-z])(d?)(" + "|".join(GREEK) + r")(?![a-z])"),
     lambda m: m.group(1) + GREEK[m.group(2)]),
    (re.compile(r"\binfinity\b|(?<=-> )inf\b|(?<=→ )inf\b"), "∞"),
    (re.compile(r"\s*->\s*"), " → "),
    (re.compile(r">="), "≥"),
    (re.compile(r"<="), "≤"),
    (re.compile(r"!="), "≠"),
    (re.compile(r"\+/-|\+-(?=\s*\d)"), "±"),
    # an exponent of a meet binds to the whole meet: m∧n^-1 is (m∧n)⁻¹
    (re.compile(r"(?<![(\w])(\w+\s*∧\s*\w+)(?=\^)"), r"(\1)"),
    (re.compile(r"\^\{?(-?\d+)\}?"), lambda m: superscript(m.group(1))),
    (re.compile(r"(?<=[\w)*])_\{?([A-Za-z0-9α-ωΔ]+)\}?"), lambda m: subscript(m.group(1))),
    (re.compile(r"(?<=\d)x(?=\d)"), "×"),
    (re.compile(r"(?<=[\w)²³¹⁰⁴⁵⁶⁷⁸⁹])\s+x\s+(?=[\w(])"), " × "),
    (re.compile(r"\bNaN\b|\bnan\b"), "NaN"),
    (re.compile(r"\bsqrt\((\w+)\)"), r"√\1"),
    (re.compile(r"\bsqrt\b\s*"), "√"),
)


def typeset(text: str) -> str:
    """A sentence in the book's symbols, from its ASCII spelling.

    Greek names become letters (``alpha_c`` -> ``αc``, ``beta*`` -> ``β*``), subscripts
    Unicode subscripts where every character has one (``alpha_l`` -> ``αₗ``; ``c`` has none and
    stays a letter), ``^2`` and ``^-1`` superscripts, an exponent of a meet its own bracket
    (``m∧n^-1`` -> ``(m∧n)⁻¹``), ``->`` an arrow, ``>=``/``<=`` the relations, ``infinity``
    ``∞``, ``m x n`` and ``128x128`` a times sign, and numbers in exponent notation plain powers
    of ten (``1e+04`` -> ``10⁴``). Idempotent: typesetting twice changes nothing.

    Parameters
    ----------
    text : str
        Plain text (a verdict sentence, a reason, a table header).

    Returns
    -------
    str
        The same text in Unicode symbols.
    """
    for pat, rep in _RULES:
        text = pat.sub(rep, text)
    return text


_VERBATIM = re.compile(r"(`[^`]*`|\$[^$]*\$)")


def typeset_markdown(text: str) -> str:
    """:func:`typeset` on Markdown text, leaving code spans (between backticks) and math
    (``$...$``) as they are.

    Parameters
    ----------
    text : str
        One line or cell of Markdown.

    Returns
    -------
    str
        The text with its prose typeset.
    """
    parts = _VERBATIM.split(text)
    return "".join(p if i % 2 else typeset(p) for i, p in enumerate(parts))


def plural(n: int, word: str, many: str | None = None) -> str:
    """``"1 point"``, ``"2 points"``: a count with its noun in the right number.

    Parameters
    ----------
    n : int
        The count.
    word : str
        The singular noun.
    many : str, optional
        The plural when it is not ``word + "s"``.

    Returns
    -------
    str
        ``"<n> <noun>"``.
    """
    return f"{n} {word if n == 1 else (many or word + 's')}"


