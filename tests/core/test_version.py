"""Tests of ``stumplib.core.version``: the code version follows the source files it hashes."""
from __future__ import annotations

import pytest

from stumplib.core import version


def test_code_version_is_stable_and_depends_on_the_packages_named(tmp_path, monkeypatch):
    assert version.code_version() == version.code_version()
    assert len(version.code_version()) == 16
    assert version.code_version("core") != version.code_version("core", "phase")
    assert version.code_version("phase", "core") == version.code_version("core", "phase")
    # a copy of a package tree: an edit of one file changes its package's version only
    pkg = tmp_path / "stumplib"
    for sub in ("core", "phase"):
        (pkg / sub).mkdir(parents=True)
        (pkg / sub / "a.py").write_text(f"x = '{sub}'\n")
    monkeypatch.setattr(version, "PACKAGE", pkg)
    core, phase = version.code_version("core"), version.code_version("phase")
    (pkg / "phase" / "a.py").write_text("x = 'edited'\n")
    assert version.code_version("core") == core and version.code_version("phase") != phase


def test_code_version_refuses_an_unknown_package():
    with pytest.raises(ValueError, match="packages must name subpackages of stumplib"):
        version.code_version("nope")
