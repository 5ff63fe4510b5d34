"""The build extension's stamp (``stumplib.core.sphinxext``) without a build: what it depends on and the
file it writes. (The extension inside real builds, pre-execution included: ``test_build_cache.py``.)"""
from __future__ import annotations

import json

from stumplib.core import book
from stumplib.core.sphinxext import build_stamp, write_stamp


def test_stamp_follows_the_code_profile_and_cache_setting(monkeypatch):
    monkeypatch.delenv(book.ENV_VAR, raising=False)
    monkeypatch.delenv(book.CACHE_ENV, raising=False)
    base = build_stamp()
    assert base.pop("seed_audit")  # a hash of scripts/SEED_AUDIT.json, which the chapters read
    assert base == {"code_version": book.code_version(), "profile": "", "cache": "on"}
    monkeypatch.setenv(book.ENV_VAR, "full")
    assert build_stamp()["profile"] == "full"
    monkeypatch.setenv(book.CACHE_ENV, "0")
    assert build_stamp()["cache"] == "off"
    monkeypatch.setattr(book, "code_version", lambda: "f" * 16)
    assert build_stamp()["code_version"] == "f" * 16


def test_write_stamp_stores_this_process_stamp_next_to_the_cache(tmp_path):
    cache = tmp_path / "_build" / ".jupyter_cache"
    sf = write_stamp(cache)
    assert sf == tmp_path / "_build" / ".jupyter_cache.stamp.json"
    assert json.loads(sf.read_text()) == build_stamp()
    assert not list(sf.parent.glob("*.tmp"))
