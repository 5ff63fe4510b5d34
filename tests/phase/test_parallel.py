"""Tests of ``stumplib.phase.parallel``: the thread pool: results do not depend on the number of
threads."""
from __future__ import annotations

import numpy as np
import pytest

from stumplib.phase.proximal import proximal

#: the semantic branch's ill-conditioned window (see chapter 6)


def test_proximal_threads_give_the_same_bits(monkeypatch):
    """A batch large enough to be split over threads gives the same minimisers, bit for bit, with
    one thread and with three (every problem is solved on its own)."""
    from stumplib.phase import parallel as se
    rng = np.random.default_rng(3)
    P = 3 * 2 ** 13 + 17
    c, t, V = rng.normal(size=(P, 2)) * 0.7, rng.uniform(0.1, 0.9, size=(P, 2)), rng.uniform(1, 40, size=P)
    out = {}
    for n in ("1", "3"):
        monkeypatch.setenv("STUMPLIB_THREADS", n)
        assert se.num_threads() == int(n)
        out[n] = proximal(c, t, V, 0.5)
    for a, b in zip(out["1"], out["3"]):
        assert np.array_equal(a, b)
    monkeypatch.setenv("STUMPLIB_THREADS", "0")
    with pytest.raises(ValueError, match="STUMPLIB_THREADS"):
        se.num_threads()
