"""Memoisation hook: the science modules name a result, the book decides whether to keep it.

A computation worth keeping between runs (a chapter's training runs, certified scales) is written
``remember(name, config, compute)``: ``name`` says what it is, ``config`` everything it depends on
besides the code, ``compute`` a function that computes it. With no store installed (a script, a
sweep worker, a test) ``compute()`` simply runs. The book installs its results cache
(:func:`stumplib.book.cache.cached`, keyed on the configuration and the library's code version)
when a chapter starts (:func:`stumplib.book.start`), so a chapter reloads what an earlier execution
stored; importing :mod:`stumplib.book` installs nothing.

The science packages import this module and nothing of the book.
"""
from __future__ import annotations

from typing import Any, Callable, Mapping, Protocol


class Store(Protocol):
    """What :func:`install` accepts: ``store(name, config, compute, exclusive=...) -> result``."""

    def __call__(self, name: str, config: Mapping[str, Any], compute: Callable[[], Any], *,
                 exclusive: bool = False) -> Any: ...


_STORE: Store | None = None


def install(store: Store | None) -> Store | None:
    """Make ``store`` keep the results :func:`remember` is given (``None``: keep nothing).

    Parameters
    ----------
    store : Store or None
        Called as ``store(name, config, compute, exclusive=...)``; returns the result, stored or
        reloaded.

    Returns
    -------
    Store or None
        The store installed before (to restore it).
    """
    global _STORE
    old, _STORE = _STORE, store
    return old


def installed() -> Store | None:
    """The store :func:`remember` uses now.

    Returns
    -------
    Store or None
        ``None`` when results are not kept.
    """
    return _STORE


def remember(name: str, config: Mapping[str, Any], compute: Callable[[], Any], *,
             exclusive: bool = False) -> Any:
    """``compute()``, kept by the installed store under ``name`` and ``config`` if there is one.

    Parameters
    ----------
    name : str
        What the result is (letters, digits, ``_`` and ``-``).
    config : Mapping[str, Any]
        Everything the result depends on besides the code (JSON-serialisable values).
    compute : Callable[[], Any]
        Computes the result when no stored one matches.
    exclusive : bool
        Let one process compute while others asking for the same result wait for it (a file
        lock per result in the book's store; other configurations do not wait): for a result
        that two chapters executed side by side both need.

    Returns
    -------
    Any
        The result, as the store returns it (reloaded results come back as numpy arrays).
    """
    if _STORE is None:
        return compute()
    return _STORE(name, config, compute, exclusive=exclusive)
