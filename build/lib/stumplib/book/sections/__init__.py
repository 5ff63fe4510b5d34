"""What chapter sections show of the science's results: table rows and verdict sentences.

One module per subject (the science it presents lives under :mod:`stumplib.stump` or
:mod:`stumplib.phase`); the chapters call these to build their tables and to judge their claims
(:mod:`stumplib.book.claims` glues the verdicts).
"""
