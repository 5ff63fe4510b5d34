"""The book's one verdict language: a status word and one short sentence, computed from the data.

Every claim a chapter judges goes through one function of this module, one per kind of verdict:

- :func:`against_target`: an estimate against a target value (``p = 0.991 [0.986, 0.996]`` against 1);
- :func:`at_least` / :func:`at_most`: an estimate against a one-sided requirement;
- :func:`rate_up_to_logs`: a fitted log-log slope against a rate that holds up to logarithms
  (an :math:`\\tilde O(x^{a})` claim), judged as such rather than as an exact exponent;
- :func:`growth_up_to_logs`: the same for a quantity claimed to *grow* at least like ``x^a``
  up to logarithms (the certified scale that an upper bound rests on);
- :func:`choose_theory`: measurements against two competing predictions (z-scores);
- :func:`per_form_theory`: an extrapolation in ``d`` against two predictions, each
  acceptable approach form judged with its own fit (z-scores per form);
- :func:`all_hold`: a claim that needs every part to hold (fails as soon as one part fails);
- :func:`ordering`: an ordering between two estimated quantities (``alpha_l >= alpha_c``);
- :func:`combine`: several verdicts on the parts of one claim (``partly`` when they differ);
- :func:`located`: a quantity claimed to exist (a threshold) found and located, or shown absent.

Each returns a :class:`Verdict`: ``status`` is one of :data:`STATUSES` and ``sentence`` a short
sentence in the book's symbols, with numbers and their intervals, that a reader can quote. Chapters
glue it with :func:`stumplib.book.glue_verdict` (``<claim>_status``, ``<claim>_verdict``,
``<claim>_reason``), and the landing page shows the same words.

=========  ===============================================================
status     meaning
=========  ===============================================================
holds      the measurement agrees with the claim, within its interval
fails      the measurement contradicts the claim, beyond its interval
undecided  the interval is too wide to tell; the sentence says what would
partly     some parts hold, others fail or are undecided
=========  ===============================================================
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np

from stumplib.book.typeset import typeset
from stumplib.core.stats import Estimate

STATUSES = ("holds", "fails", "undecided", "partly")


@dataclass(frozen=True)
class Verdict:
    """A status word and one sentence.

    Attributes
    ----------
    status : one of :data:`STATUSES`.
    sentence : what was measured against what, with numbers (no leading status word).
    """

    status: str
    sentence: str

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(f"status must be one of {', '.join(STATUSES)}; got {self.status!r}")
        if not self.sentence.strip():
            raise ValueError("sentence must not be empty")
        object.__setattr__(self, "sentence", typeset(self.sentence))  # the book's symbols

    @property
    def word(self) -> str:
        """The status capitalised, as it opens the verdict: ``"Holds"``."""
        return self.status.capitalize()

    @property
    def text(self) -> str:
        """Plain text: ``"Holds: p = 0.991 [0.986, 0.996] against 1."``"""
        return f"{self.word}: {self.sentence}"

    @property
    def markdown(self) -> str:
        """Markdown: ``"**Holds**: p = ..."``."""
        return f"**{self.word}**: {self.sentence}"

    def __str__(self) -> str:
        return self.text


def _sentence(s: str) -> str:
    s = s.strip()
    return s if s.endswith((".", "!", "?")) else s + "."


def _finite(est: Estimate) -> bool:
    return math.isfinite(est.value) and math.isfinite(est.lo) and math.isfinite(est.hi)


def _qual(qualifier: str) -> str:
    return f" ({qualifier})" if qualifier else ""


def against_target(est: Estimate, target: float, *, symbol: str, tol: float = 0.0,
                   max_width: float | None = None, fmt: str = ".3g", qualifier: str = "",
                   target_text: str | None = None) -> Verdict:
    """An estimate against a target value.

    Parameters
    ----------
    est : the measurement with its interval.
    target : the value the claim predicts.
    symbol : the measured quantity in the book's symbols (``"p"``, ``"slope of beta in t"``).
    tol : a stated modelling tolerance: the target may lie up to ``tol`` outside the interval.
    max_width : an interval wider than this cannot decide (``undecided`` even if it contains the
        target); ``None`` for no such limit.
    fmt : number format (a ``format`` spec, default ``".3g"``) of the estimate, target and tolerance
        in the sentence.
    qualifier : what differs from the paper's object (``"hand-set head"``), shown in brackets.
    target_text : how to print the target (default: formatted with ``fmt``).

    Returns
    -------
    ``holds`` when the target lies in the interval (widened by ``tol``) and the interval is no wider
    than ``max_width``; ``fails`` when it lies outside; ``undecided`` when the interval is not finite
    or too wide.
    """
    tgt = target_text if target_text is not None else format(target, fmt)
    margin = f" (tolerance {tol:{fmt}})" if tol else ""
    base = f"{symbol} = {est:{fmt}} against {tgt}{margin}{_qual(qualifier)}"
    if not _finite(est):
        return Verdict("undecided", _sentence(f"{symbol} has no finite interval{_qual(qualifier)}"))
    inside = est.contains(target, tol)
    if not inside:
        return Verdict("fails", _sentence(base))
    if max_width is not None and est.width > max_width:
        return Verdict("undecided", _sentence(f"{base}; the interval is wider than {max_width:{fmt}}"))
    return Verdict("holds", _sentence(base))


def _one_sided(est: Estimate, bound: float, *, symbol: str, above: bool, fmt: str,
               qualifier: str) -> Verdict:
    rel = ">=" if above else "<="
    base = f"{symbol} = {est:{fmt}}, required {rel} {bound:{fmt}}{_qual(qualifier)}"
    if not math.isfinite(est.value):
        return Verdict("undecided", _sentence(f"{symbol} could not be measured{_qual(qualifier)}"))
    lo, hi = est.lo, est.hi
    if above:
        ok, bad = lo >= bound, hi < bound
    else:
        ok, bad = hi <= bound, lo > bound
    if ok:
        return Verdict("holds", _sentence(base))
    if bad:
        return Verdict("fails", _sentence(base))
    what = "range" if est.kind == "range" else "interval"
    return Verdict("undecided", _sentence(f"{base}; the {what} straddles {bound:{fmt}}"))


def at_least(est: Estimate, bound: float, *, symbol: str, fmt: str = ".3g",
             qualifier: str = "") -> Verdict:
    """``holds`` when the whole interval is at or above ``bound``, ``fails`` when it is wholly below,
    ``undecided`` when it straddles it (a censored lower bound at or above ``bound`` holds).

    Parameters
    ----------
    est : Estimate
        The measurement with its interval; a non-finite value is ``undecided``.
    bound : float
        The lower bound the claim requires.
    symbol : str
        The measured quantity in the book's symbols, used in the sentence.
    fmt : str
        Number format (a ``format`` spec) of the sentence's numbers.
    qualifier : str
        What differs from the paper's object, shown in brackets (``""``: nothing).

    Returns
    -------
    Verdict
        Status ``holds``, ``fails`` or ``undecided`` with its sentence.
    """
    return _one_sided(est, bound, symbol=symbol, above=True, fmt=fmt, qualifier=qualifier)


def at_most(est: Estimate, bound: float, *, symbol: str, fmt: str = ".3g",
            qualifier: str = "") -> Verdict:
    """``holds`` when the whole interval is at or below ``bound``, ``fails`` when it is wholly above,
    ``undecided`` when it straddles it.

    Parameters
    ----------
    est : Estimate
        The measurement with its interval; a non-finite value is ``undecided``.
    bound : float
        The upper bound the claim requires.
    symbol : str
        The measured quantity in the book's symbols, used in the sentence.
    fmt : str
        Number format (a ``format`` spec) of the sentence's numbers.
    qualifier : str
        What differs from the paper's object, shown in brackets (``""``: nothing).

    Returns
    -------
    Verdict
        Status ``holds``, ``fails`` or ``undecided`` with its sentence.
    """
    return _one_sided(est, bound, symbol=symbol, above=False, fmt=fmt, qualifier=qualifier)


def log_slopes(x_mid: float, exponent: float = -1.0) -> tuple[float, float]:
    """Local log-log slopes ``(s_1, s_2)`` of ``x**exponent * (log x)**k`` at ``x_mid`` for k = 1, 2:
    ``s_k = exponent + k / ln(x_mid)``.

    Parameters
    ----------
    x_mid : float
        The point (the grid's geometric middle) where the slopes are taken; finite and above 1,
        else ``ValueError``.
    exponent : float
        The power ``a`` of ``x**a`` (``-1`` for a ``1/x`` rate).

    Returns
    -------
    tuple[float, float]
        ``(s_1, s_2)``: the local slopes with one and with two logarithms.
    """
    if not (x_mid > 1.0 and math.isfinite(x_mid)):
        raise ValueError(f"x_mid must be a finite number above 1; got {x_mid!r}")
    L = math.log(x_mid)
    return exponent + 1.0 / L, exponent + 2.0 / L


def rate_up_to_logs(slope: Estimate, *, x_mid: float, exponent: float = -1.0, variable: str,
                    fmt: str = ".2f", qualifier: str = "",
                    max_width: float | None = None) -> Verdict:
    """A fitted log-log slope against a rate claimed up to logarithms, :math:`\\tilde O(x^{a})`.

    A rate ``x**a (log x)**k`` has local slope ``s_k = a + k / ln x_mid`` at the grid's geometric
    middle ``x_mid``. Rule: **holds** when the slope's interval reaches ``s_1`` or below (the data
    decay at least as fast as ``x**a log x`` allows) and is no wider than ``max_width``; **fails**
    when the whole interval lies above ``s_2`` (slower than even two logarithms allow);
    **undecided** otherwise.

    Parameters
    ----------
    slope : the fitted slope of the error against ``x`` with its interval.
    x_mid : geometric middle of the grid in ``x`` (above 1).
    exponent : the claimed power ``a`` (``-1`` for ``x^-1``).
    variable : the variable's symbol (``"m∧n"``, ``"N"``).
    fmt : number format of the sentence (default ``".2f"``).
    qualifier : what differs from the paper's object, shown in brackets.
    max_width : an interval wider than this cannot hold (it does not resolve the exponent); ``None``
        for no such limit.

    Returns
    -------
    Verdict
        ``holds``, ``fails`` or ``undecided`` by the rule above (``undecided`` also when the slope's
        interval is not finite), with a sentence quoting the slope, ``s_1`` and ``s_2``.
    """
    s1, s2 = log_slopes(x_mid, exponent)
    text = (f"slope in {variable} {slope:{fmt}}; a {variable}^{exponent:g} rate up to one log "
            f"allows {s1:{fmt}}, two logs {s2:{fmt}}{_qual(qualifier)}")
    if not _finite(slope):
        return Verdict("undecided", _sentence(f"the slope in {variable} has no finite interval"
                                              f"{_qual(qualifier)}"))
    if slope.lo > s2:
        return Verdict("fails", _sentence(text))
    if slope.lo <= s1:
        return _unless_too_wide(slope, max_width, text, fmt)
    return Verdict("undecided", _sentence(text))


def _unless_too_wide(est: Estimate, max_width: float | None, text: str, fmt: str) -> Verdict:
    """``holds``, unless the interval is wider than ``max_width`` (then ``undecided``)."""
    if max_width is not None and est.width > max_width:
        return Verdict("undecided", _sentence(f"{text}; the interval is {est.width:{fmt}} wide, "
                                              f"wider than {max_width:{fmt}}"))
    return Verdict("holds", _sentence(text))


def growth_up_to_logs(slope: Estimate, *, x_mid: float, exponent: float = 1.0, variable: str,
                      fmt: str = ".2f", qualifier: str = "",
                      max_width: float | None = None) -> Verdict:
    """A fitted log-log slope against a growth claimed up to logarithms, ``x^a / (log x)^k``.

    The mirror of :func:`rate_up_to_logs` for a quantity that must grow at least as fast as
    ``x**a`` over a few logarithms (the certified scale ``beta*``, whose inverse is the error an
    :math:`\\tilde O(x^{-a})` bound allows): ``x**a / (log x)**k`` has local slope
    ``g_k = a - k / ln x_mid``. Rule: **holds** when the slope's interval reaches ``g_1`` or above
    and is no wider than ``max_width``; **fails** when the whole interval lies below ``g_2``;
    **undecided** otherwise.

    Parameters
    ----------
    slope : the fitted slope of the growing quantity against ``x`` with its interval.
    x_mid : geometric middle of the grid in ``x`` (above 1).
    exponent : the claimed power ``a`` (``1`` for linear growth).
    variable : the variable's symbol (``"m∧n"``).
    fmt : number format of the sentence.
    qualifier : what differs from the paper's object, shown in brackets.
    max_width : an interval wider than this cannot hold; ``None`` for no such limit.

    Returns
    -------
    Verdict
    """
    s1, s2 = log_slopes(x_mid, -exponent)
    g1, g2 = -s1, -s2
    power = variable if exponent == 1 else f"{variable}^{exponent:g}"
    text = (f"slope in {variable} {slope:{fmt}}; growth like {power} up to one log needs "
            f"{g1:{fmt}}, two logs {g2:{fmt}}{_qual(qualifier)}")
    if not _finite(slope):
        return Verdict("undecided", _sentence(f"the slope in {variable} has no finite interval"
                                              f"{_qual(qualifier)}"))
    if slope.hi < g2:
        return Verdict("fails", _sentence(text))
    if slope.hi >= g1:
        return _unless_too_wide(slope, max_width, text, fmt)
    return Verdict("undecided", _sentence(text))


def choose_theory(z_claimed: Sequence[float], z_other: Sequence[float], *,
                  names: tuple[str, str] = ("the accurate theory", "the published theory"),
                  follow: float = 2.0, separate: float = 4.0, what: str = "the minimisers",
                  seeds_to_decide: int | None = None) -> Verdict:
    """Measurements at several points against two predictions, as z-scores.

    Parameters
    ----------
    z_claimed, z_other : shape ``(K,)``: (measured - predicted) / combined standard error at each
        point, against the claimed theory ``names[0]`` and the other ``names[1]``.
    names : the two theories' names for the sentence, claimed one first (a leading ``"the "`` and
        trailing ``" theory"`` are dropped where the largest ``|z|`` are quoted).
    follow : within this many standard errors of a theory at every point counts as following it.
    separate : at least this many from the other theory at one point is needed to tell them apart.
    what : the measured objects, the sentence's subject (``"the minimisers"``).
    seeds_to_decide : shown when undecided (the seeds the measured spread says would decide).

    Returns
    -------
    ``holds`` when the data follow ``names[0]`` (within ``follow`` at every point and at least
    ``separate`` from ``names[1]`` at one); ``fails`` when they follow ``names[1]`` instead, or when
    they are more than ``follow`` from both at some point and separated from ``names[0]``;
    ``undecided`` otherwise.
    """
    a = np.abs(np.asarray(z_claimed, dtype=float))
    b = np.abs(np.asarray(z_other, dtype=float))
    if a.shape != b.shape or a.size == 0 or not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
        raise ValueError("z_claimed and z_other must be finite arrays of the same non-zero length")
    za, zb = float(a.max()), float(b.max())
    short = [n.removeprefix("the ").removesuffix(" theory") for n in names]
    nums = f"largest |z| {za:.1f} ({short[0]}), {zb:.1f} ({short[1]})"
    if za <= follow and zb >= separate:
        return Verdict("holds", _sentence(f"{what} follow {names[0]}: {nums}"))
    if zb <= follow and za >= separate:
        return Verdict("fails", _sentence(f"{what} follow {names[1]}: {nums}"))
    if za >= separate and zb >= separate:
        return Verdict("fails", _sentence(f"{what} follow neither theory: {nums}"))
    more = f"; about {seeds_to_decide} seeds would decide" if seeds_to_decide else ""
    return Verdict("undecided", _sentence(f"{what} do not separate the theories: {nums}{more}"))


def per_form_theory(z_claimed: Mapping[str, float], z_other: Mapping[str, float], *,
                            names: tuple[str, str] = ("the accurate theory",
                                                      "the published theory"),
                            follow: float = 2.0, separate: float = 4.0,
                            what: str = "the extrapolation") -> Verdict:
    """An extrapolation in ``d`` against two predictions, every acceptable approach form judged
    with its **own** fit and standard error (:func:`stumplib.book.studies.scaling_forms.form_z`).

    The rule (chapter 6, issue 47): a theory is *followed* only when every acceptable form is
    within ``follow`` standard errors of it and at least ``separate`` from the other. No
    standard error is taken from a hull over forms: a form's interval and its z-scores come from
    the same fit.

    Parameters
    ----------
    z_claimed, z_other : mapping of str to float
        ``{form: (limit - prediction) / combined standard error}`` against the claimed theory
        ``names[0]`` and the other ``names[1]``, over the same acceptable forms (the chosen form
        first; the sentence quotes them in this order). Empty: no acceptable form.
    names : tuple of str
        The two theories' names for the sentence, claimed one first.
    follow : float
        Within this many standard errors of a theory counts as following it.
    separate : float
        At least this many from a theory counts as separated from it.
    what : str
        The sentence's subject (``"the lowest minima's test error"``).

    Returns
    -------
    Verdict
        ``holds`` when every form has ``|z_claimed| <= follow`` and ``|z_other| >= separate``;
        ``fails`` when every form has ``|z_other| <= follow`` and ``|z_claimed| >= separate``
        (it follows the other theory), or when some form lies at least ``separate`` from both
        (it follows neither); ``undecided`` otherwise, and when no form is acceptable.

    Raises
    ------
    ValueError
        ``z_claimed`` and ``z_other`` over different forms, or a z that is not finite.
    """
    if list(z_claimed) != list(z_other):
        raise ValueError(f"z_claimed and z_other must name the same forms; got "
                         f"{list(z_claimed)} and {list(z_other)}")
    if not z_claimed:
        return Verdict("undecided", _sentence(f"{what}: no acceptable form"))
    a = {f: float(z) for f, z in z_claimed.items()}
    b = {f: float(z) for f, z in z_other.items()}
    if not all(math.isfinite(v) for v in (*a.values(), *b.values())):
        raise ValueError("every z must be finite")
    short = [n.removeprefix("the ").removesuffix(" theory") for n in names]
    nums = "z by form (" + ", ".join(short) + "): " + "; ".join(
        f"{f} {a[f]:+.1f}, {b[f]:+.1f}" for f in a)
    za, zb = np.abs(list(a.values())), np.abs(list(b.values()))
    if np.all(za <= follow) and np.all(zb >= separate):
        return Verdict("holds", _sentence(f"{what} follows {names[0]}: {nums}"))
    if np.all(zb <= follow) and np.all(za >= separate):
        return Verdict("fails", _sentence(f"{what} follows {names[1]}: {nums}"))
    if np.any((za >= separate) & (zb >= separate)):
        return Verdict("fails", _sentence(f"{what} follows neither theory: {nums}"))
    return Verdict("undecided", _sentence(f"{what} does not separate the theories in every "
                                          f"acceptable form: {nums}"))


def all_hold(parts: Sequence[Verdict], sentence: str) -> Verdict:
    """One verdict on a claim that needs every part: ``holds`` when every part holds, ``fails``
    when any part fails, ``undecided`` otherwise (unlike :func:`combine`, never ``partly``).

    Parameters
    ----------
    parts : sequence of Verdict
        The parts' verdicts, at least one (else ``ValueError``); a part ``partly`` met counts as
        undecided.
    sentence : str
        The claim's sentence (say which part decides); ended with a full stop if needed.

    Returns
    -------
    Verdict
    """
    if not parts:
        raise ValueError("parts must hold at least one verdict")
    st = {p.status for p in parts}
    status = "holds" if st == {"holds"} else "fails" if "fails" in st else "undecided"
    return Verdict(status, _sentence(sentence))


def ordering(a: Estimate, b: Estimate, *, symbols: tuple[str, str], relation: str = ">=",
             fmt: str = ".3g", qualifier: str = "") -> Verdict:
    """Whether ``a relation b`` (``">="`` or ``"<="``) between two estimated quantities.

    ``holds`` when the intervals are separated in the claimed order, ``fails`` when they are
    separated in the other order, ``undecided`` when they overlap or one is not finite.

    Parameters
    ----------
    a, b : Estimate
        The two estimated quantities with their intervals, in the order of the claim.
    symbols : tuple[str, str]
        The symbols of ``a`` and ``b`` for the sentence.
    relation : str
        ``">="`` (claim ``a >= b``) or ``"<="``; anything else is a ``ValueError``.
    fmt : str
        Number format (a ``format`` spec) of the sentence's numbers.
    qualifier : str
        What differs from the paper's object, shown in brackets (``""``: nothing).

    Returns
    -------
    Verdict
        ``holds``, ``fails`` or ``undecided`` with its sentence.
    """
    if relation not in (">=", "<="):
        raise ValueError(f"relation must be '>=' or '<='; got {relation!r}")
    sa, sb = symbols
    base = f"{sa} = {a:{fmt}}, {sb} = {b:{fmt}}{_qual(qualifier)}"
    if not (_finite(a) and _finite(b)):
        return Verdict("undecided", _sentence(f"{base}; an interval is not finite"))
    hi, lo = (a, b) if relation == ">=" else (b, a)
    if hi.lo >= lo.hi:
        return Verdict("holds", _sentence(f"{sa} {relation} {sb}: {base}"))
    if hi.hi < lo.lo:
        other = "<" if relation == ">=" else ">"
        return Verdict("fails", _sentence(f"{sa} {other} {sb}: {base}"))
    return Verdict("undecided", _sentence(f"{base}; the intervals overlap"))


def combine(parts: Sequence[Verdict], sentence: str) -> Verdict:
    """One verdict on a claim made of ``parts``: their common status when they agree, else ``partly``.

    Parameters
    ----------
    parts : Sequence[Verdict]
        The verdicts on the claim's parts, at least one (else ``ValueError``).
    sentence : str
        The combined claim's sentence (say which part holds); ended with a full stop if needed.

    Returns
    -------
    Verdict
        The common status of ``parts`` (or ``partly``) with ``sentence``.
    """
    if not parts:
        raise ValueError("parts must hold at least one verdict")
    statuses = {p.status for p in parts}
    status = statuses.pop() if len(statuses) == 1 else "partly"
    return Verdict(status, _sentence(sentence))


def located(est: Estimate, *, symbol: str, absent: str | None = None, fmt: str = ".3g",
            max_width: float | None = None, qualifier: str = "") -> Verdict:
    """Whether a quantity claimed to exist (a threshold, a crossing) was found and located.

    Parameters
    ----------
    est : the located value with its interval (NaN when not found).
    symbol : its symbol (``"alpha_c"``).
    absent : when the search established that it does not exist where the claim puts it (a reason
        such as ``"the losses do not cross for alpha in [0.8, 2.6]"``), the verdict fails with that
        reason; ``None`` when it was not found for another reason (then undecided).
    fmt : number format of the located value in the sentence (default ``".3g"``).
    max_width : an interval wider than this does not locate it (undecided).
    qualifier : what differs from the paper's object.

    Returns
    -------
    ``holds`` when the interval is finite (and no wider than ``max_width``); ``fails`` with
    ``absent``; ``undecided`` otherwise.
    """
    if _finite(est) and (max_width is None or est.width <= max_width):
        return Verdict("holds", _sentence(f"{symbol} = {est:{fmt}}{_qual(qualifier)}"))
    if absent:
        return Verdict("fails", _sentence(f"no {symbol}: {absent}{_qual(qualifier)}"))
    if _finite(est):
        return Verdict("undecided", _sentence(f"{symbol} = {est:{fmt}}: wider than {max_width:{fmt}}"
                                              f"{_qual(qualifier)}"))
    return Verdict("undecided", _sentence(f"{symbol} not located{_qual(qualifier)}"))


#: the landing page's longest reason, in words (its dashboard fits one screen)
MAX_REASON_WORDS = 22


def short_reason(sentence: str, max_words: int = MAX_REASON_WORDS) -> str:
    """The landing page's one-line reason from a verdict's sentence, shortened without cutting a
    statement: trailing parenthetical qualifiers dropped (the sample, the head, the grid: the
    chapter says them), a seed audit's disagreement said in two words, then, if still longer than
    ``max_words``, every parenthesis dropped, and then whole trailing clauses after a semicolon
    (each a statement of its own), the first clause always kept whole. Nothing is cut inside a
    clause and no ellipsis is added: a first clause longer than ``max_words`` is returned whole (the
    chapter then passes its own ``why``, :func:`stumplib.book.glue.glue_verdict`; the site test
    flags a reason too long for its row).

    Parameters
    ----------
    sentence : str
        The verdict's sentence.
    max_words : int
        The longest reason, in words.

    Returns
    -------
    str
        The reason, ending with a full stop; at most ``max_words`` words unless its first clause is
        longer.
    """

    s = sentence.strip().rstrip(".")
    s = re.sub(r"; across (\d+) seeds the rule says [^;]*?, so the status is not decided",
               r"; the \1 audited seeds disagree", s)

    def words(t: str) -> int:
        return len(t.split())

    while words(s) > max_words and re.search(r"\s*\([^()]*\)$", s):
        s = re.sub(r"\s*\([^()]*\)$", "", s)
    if words(s) > max_words:
        s = re.sub(r"\s*\([^()]*\)", "", s)
    if words(s) > max_words:
        seeds = re.search(r"; the \d+ audited seeds disagree$", s)  # kept: it is why
        tail = seeds.group(0) if seeds else ""
        clauses = [c.strip() for c in s[:len(s) - len(tail)].split(";")]
        keep = clauses[0]
        for c in clauses[1:]:
            if words(f"{keep}; {c}") + words(tail) > max_words:
                break
            keep = f"{keep}; {c}"
        s = keep + tail
    return s + "."
