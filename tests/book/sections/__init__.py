"""Tests of chapter sections (stumplib.book.sections): a package, so that their names may repeat
those of the science they present (tests/stump/test_two_head.py and this test_two_head.py)."""
