"""Tests of ``stumplib.core.memo``: the hook computes without a store and defers to one."""
from __future__ import annotations

from stumplib.core import memo


def test_remember_computes_without_a_store_and_uses_an_installed_one():
    old = memo.install(None)
    try:
        calls = []
        assert memo.remember("x", {"a": 1}, lambda: calls.append(1) or 41) == 41
        assert memo.remember("x", {"a": 1}, lambda: calls.append(1) or 41) == 41
        assert len(calls) == 2  # nothing kept: computed twice

        seen = []

        def store(name, config, compute, *, exclusive=False):
            seen.append((name, dict(config), exclusive))
            return compute() + 1

        assert memo.install(store) is None and memo.installed() is store
        assert memo.remember("y", {"b": 2}, lambda: 1, exclusive=True) == 2
        assert seen == [("y", {"b": 2}, True)]
    finally:
        memo.install(old)


def test_importing_the_book_has_no_side_effect_and_starting_a_chapter_installs_its_cache():
    import subprocess
    import sys

    code = ("import stumplib.book\nfrom stumplib.core import memo\nassert memo.installed() is None\n"
            "from stumplib.book import cache\ncache.install()\nassert memo.installed() is cache.store\n")
    subprocess.run([sys.executable, "-c", code], check=True)
    from stumplib import book
    from stumplib.book import cache

    import torch

    old, dtype = memo.install(None), torch.get_default_dtype()
    try:
        book.start("smoke", "cpu")
        assert memo.installed() is cache.store
    finally:
        memo.install(old)
        torch.set_default_dtype(dtype)
