"""Tests of :mod:`stumplib.book.sections`, one file per section module.

A package (this file) so that pytest imports these files as ``sections.test_<subject>``: their
names mirror the section modules and may repeat a science test's name
(``tests/book/studies/test_diagram.py``, ``tests/stump/test_two_head.py``).
"""
