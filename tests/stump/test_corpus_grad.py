"""The general corpus gradient (stumplib.stump.corpus_grad): the fused moments at large beta
against a centred reference, and the loss and gradient against the model's definition."""
from __future__ import annotations

import pytest
import torch

from stumplib.stump.corpus_grad import corpus_grad, corpus_moments
from stumplib.stump.model import estimate_and_grad
from stumplib.stump.tasks import sample_tasks


def test_fused_moments_match_centred_reference_at_large_beta():
    """The fused kernel keeps full float64 accuracy at beta = 1e4 .. 1e6 (no cancellation)."""
    from stumplib.stump.model import estimate_and_grad_unchecked
    tau, x, y = sample_tasks(64, 50, seed=1, device="cpu")
    for beta in (1e4, 1e5, 1e6):
        be = torch.full((64,), beta)
        bb = be * 0.8 + 3.0
        ref = estimate_and_grad_unchecked(x, y, be, bb, None)
        got = corpus_moments(x, y, be, bb)
        sd = float(ref[1].abs().max()) ** 0.5  # attention spread, ~1/beta: the scale of f's errors
        torch.testing.assert_close(got[0], ref[0], rtol=1e-14, atol=0.0)
        torch.testing.assert_close(got[1], ref[1], rtol=1e-9, atol=0.0)
        # cov is exponentially small here; both agree to rounding of the spread (the reference,
        # which centres y as well, is the one with the ~1e-33 residues)
        torch.testing.assert_close(got[2], ref[2], rtol=1e-9, atol=1e-15 * sd ** 2)
        # the variance is tiny here (~1/beta^2) and must still be positive and relatively exact
        assert bool((-got[1] >= 0).all())


@pytest.mark.parametrize("beta, b", [(3.0, 2.5), (40.0, 33.0), (900.0, 700.0)])
def test_corpus_grad_equals_the_model(beta, b):
    """corpus_grad (corpora of shape (C, m, n), parameters broadcast as (K, C)) against the
    definition, stumplib.stump.model.estimate_and_grad."""
    out = [sample_tasks(12, 30, seed=s, device="cpu") for s in range(3)]
    tau, x, y = (torch.stack([o[i] for o in out]) for i in range(3))
    be = torch.tensor([[beta], [2 * beta]]).expand(-1, 3)  # (K=2, C=3)
    bb = torch.tensor([[b], [2 * b]]).expand(-1, 3)
    L, gb, gbb = corpus_grad(x, y, tau, be, bb)
    assert L.shape == (2, 3)
    f, dfb, dfbb = estimate_and_grad(x, y, be[..., None], bb[..., None])
    e = f - tau
    torch.testing.assert_close(L, (e * e).mean(-1), rtol=1e-12, atol=1e-300)
    scale = float(torch.maximum(gb.abs().max(), gbb.abs().max()))
    torch.testing.assert_close(gb, 2 * (e * dfb).mean(-1), rtol=0, atol=1e-12 * scale)
    torch.testing.assert_close(gbb, 2 * (e * dfbb).mean(-1), rtol=0, atol=1e-12 * scale)
