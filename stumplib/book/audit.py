"""The seed audit read back: how the audited seeds agree on each claim's status, as table rows.

``scripts/seed_audit.py`` reruns the chapters at several seeds and records, per claim, the status
at each seed and the key number's spread (:func:`stumplib.book.runs.read_audit` reads it).
:func:`seed_agreement` says how the seeds agree; :func:`audit_rows` are the rows of the page
"How each claim is judged".
"""
from __future__ import annotations

from collections import Counter
from typing import Any, Mapping

from stumplib.book.registry import REGISTRY, claim
from stumplib.book.runs import read_audit
from stumplib.core.stats import coverage_ratio_range


def seed_agreement(key: str, audit: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """How the audited seeds agree on ``key``'s status.

    Parameters
    ----------
    key : str
        A registry key; ``KeyError`` when it is not in the registry.
    audit : Mapping[str, Any] or None
        The seed audit as :func:`read_audit` returns it; ``None`` reads the committed one.

    Returns
    -------
    ``{"text", "status", "agree", "seeds", "counts"}``: ``text`` is ``"5/5"`` (seeds with the
    most common status over seeds audited; a seed whose chapter failed counts in the denominator:
    ``"4/5, 1 failed"``), ``"not audited"``, or, where the seed does not change the data (every
    audited seed gave the same value and status), ``"recorded sweep"`` for a claim read from one
    (:attr:`stumplib.book.registry.Claim.recorded`) and ``"none: deterministic"`` otherwise; ``status`` that most common status (``None`` when
    not audited); ``agree`` whether every audited seed gave it; ``counts`` a ``{status: seeds}``
    mapping (``"failed"`` for failed seeds).
    """
    claim(key)
    audit = read_audit() if audit is None else audit
    entry = audit.get("claims", {}).get(key, {})
    st, failed = [s for s in entry.get("status", []) if s], int(entry.get("failed", 0))
    if not st and not failed:
        return {"text": "not audited", "status": None, "agree": True, "seeds": 0, "counts": {}}
    counts = Counter(st)
    top, n = counts.most_common(1)[0] if st else (None, 0)
    if failed:
        counts["failed"] = failed
    total = len(st) + failed
    text = f"{n}/{total}" + (f", {failed} failed" if failed else "")
    values = [v for v in entry.get("value", []) if v is not None]
    if n == total > 1 and len(values) == total and len(set(values)) == 1:
        text = "recorded sweep" if claim(key).recorded else "none: deterministic"
    return {"text": text, "status": top,
            "agree": n == total, "seeds": total, "counts": dict(counts)}


def audit_code_line(audit: Mapping[str, Any] | None = None, built: str | None = None) -> str:
    """One line comparing the code the seed audit ran with the code the pages were built with.

    Parameters
    ----------
    audit : Mapping[str, Any] or None
        The seed audit (``None``: the committed one, :func:`stumplib.book.runs.read_audit`);
        ``scripts/seed_audit.py`` records the library's ``code_version``.
    built : str or None
        The built code's version (``None``: :func:`stumplib.core.version.code_version` now).

    Returns
    -------
    str
        ``"Audited code: <hash>; built code: <hash>."`` followed by whether they are the same code,
        and plainly when they differ or the audit does not record its code.
    """
    from stumplib.core.version import code_version

    audit = read_audit() if audit is None else audit
    built = code_version() if built is None else built
    audited = audit.get("code_version")
    line = f"Audited code: {audited or 'not recorded'}; built code: {built}."
    reruns = sorted({str(r["code_version"]) for r in audit.get("reruns", [])
                     if r.get("code_version") and r.get("code_version") != audited})
    if reruns:
        line += f" Some chapters were rerun at code {', '.join(reruns)}."
    if not audit:
        return line + " No seed audit is committed."
    if not audited:
        return line + (" The audit does not record the code it ran, so it may not describe these "
                       "pages: rerun scripts/seed_audit.py on this code.")
    if audited != built or reruns:
        return line + (" They differ: the seed audit ran on other code than these pages, so its "
                       "agreement may not hold for them; rerun scripts/seed_audit.py on this code.")
    return line + " The same code: the audit describes these pages."


AUDIT_HEADER = ("claim", "status per seed", "seeds agree", "key number (mean)",
                "seed-to-seed SD", "mean half-width", "coverage ratio")


def audit_rows(audit: Mapping[str, Any] | None = None) -> list[list[str]]:
    """One row per registry claim from the seed audit (``"not audited"`` where it has none).

    The coverage ratio is the mean nominal half-width of the key number's 95% interval over
    ``1.96`` times its standard deviation between seeds: about 1 when the intervals are as wide as
    the seed-to-seed spread says. With ``k`` seeds the ratio is itself uncertain; it is marked
    "under-covers" below the range nominal intervals give 95% of the time
    (:func:`stumplib.core.stats.coverage_ratio_range`) and "wide" above it; inside, the number
    stands alone (consistent with nominal coverage).

    Parameters
    ----------
    audit : Mapping[str, Any] or None
        The seed audit (``None``: the committed :data:`AUDIT_FILE`).

    Returns
    -------
    list of list of str
        One row per registry claim, the columns of :data:`AUDIT_HEADER`.
    """
    from stumplib.book.typeset import number, typeset

    audit = read_audit() if audit is None else audit
    rows = []
    for c in REGISTRY:
        a = audit.get("claims", {}).get(c.key)
        if not a or not [s for s in a.get("status", []) if s]:
            rows.append([typeset(c.claim), "not audited", "", "", "", "", ""])
            continue
        agree = seed_agreement(c.key, audit)

        def num(k: str, fmt: str = ".3g") -> str:
            v = a.get(k)
            return "" if v is None or not isinstance(v, (int, float)) or v != v else number(v, fmt)
        cover = "no spread" if a.get("sd") == 0 else num("coverage_ratio", ".2f")
        k = sum(v is not None for v in a.get("value", []))
        ratio = a.get("coverage_ratio")
        if cover and isinstance(ratio, (int, float)) and k >= 2:
            lo, hi = coverage_ratio_range(k)
            cover += " under-covers" if ratio < lo else " wide" if ratio > hi else ""
        st = [s or "-" for s in a["status"]]
        per_seed = f"{st[0]} at all {len(st)}" if len(set(st)) == 1 else ", ".join(st)
        rows.append([typeset(c.claim), per_seed, agree["text"],
                     num("mean"), num("sd"), num("half_width"), cover])
    return rows

