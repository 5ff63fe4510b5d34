"""Long gradient descent on the semantic branch inside chapter 6's ill-conditioned window.

Full-batch GD (step 0.15, lambda = 0.01, sigma = 0.5, omega = 0.3, A = [[0.6, 0.4], [0.4, 0.6]]) from
the semantic initialisation Q = Q*, one sample ratio alpha, one dimension d, S seeds (seed s draws its
teacher and its n = round(alpha d) samples from generator seed s), printing ten checkpoints: the
objective over d, the test error (20 000 Rao-Blackwellised test draws), theta = sigma^2 Q*.Q/d
(mean +- standard error over seeds), q = sigma^2 |Q|^2/d and the largest gradient norm.

Usage (the runs recorded in PHASE_WINDOW.md, one CPU thread each):

    python scripts/phase_window_gd.py --alpha 0.7927272727272727 --d 500 --seeds 8 --steps 16000
"""
from __future__ import annotations

import argparse
import math
import time

import torch

from stumplib.core.device import make_generator
from stumplib.phase import attention as at
from stumplib.phase.data import positional_encodings, sample_teacher, sample_tokens, teacher_matrix
from stumplib.phase.objective import objective_from_grams
from stumplib.phase.setting import check_A
from stumplib.phase import check_model


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--alpha", type=float, default=0.7927272727272727)
    ap.add_argument("--d", type=int, default=500)
    ap.add_argument("--seeds", type=int, default=8)
    ap.add_argument("--steps", type=int, default=16000)
    ap.add_argument("--init", choices=("semantic", "positional"), default="semantic")
    a = ap.parse_args()
    if not (0 < a.alpha <= 10 and a.d >= 10 and a.seeds >= 2 and a.steps >= 10):
        raise SystemExit("need 0 < alpha <= 10, d >= 10, seeds >= 2, steps >= 10")
    torch.set_num_threads(1)
    dt, dev = torch.float64, torch.device("cpu")
    A_ = check_A(((0.6, 0.4), (0.4, 0.6)))
    n = int(round(a.alpha * a.d))
    P = positional_encodings(a.d, device=dev, dtype=dt)
    qs, Zs = [], []
    for s in range(a.seeds):
        g = make_generator(s, dev)
        qs.append(sample_teacher(a.d, generator=g, device=dev, dtype=dt))
        Zs.append(sample_tokens(n, a.d, sigma=0.5, generator=g, device=dev, dtype=dt))
    q_star, Z = torch.stack(qs), torch.stack(Zs)
    T = teacher_matrix(Z, q_star, omega=0.3, A=A_)
    X = Z + P
    Gxx, Gxz, Gzz = X @ X.transpose(-1, -2), X @ Z.transpose(-1, -2), Z @ Z.transpose(-1, -2)
    c0 = ((T @ Gzz) * T).sum((-1, -2))
    mask = torch.ones(1, n, 1, dtype=dt)
    Q = (q_star.clone() if a.init == "semantic" else P[0].expand(a.seeds, a.d).clone())[:, :, None]
    t0 = time.time()
    for k in range(a.steps + 1):
        L, g = objective_from_grams(Q, X, Gxx, Gxz, c0, T, mask, 0.01)
        if k % max(1, a.steps // 10) == 0:
            te, _ = at.attention_test_error(Q, q_star, n_test=20000,
                                            generator=make_generator(777, dev),
                                            model=check_model(omega=0.3, sigma=0.5, A=A_))
            th = 0.25 * (Q[:, :, 0] * q_star).sum(1) / a.d
            q = 0.25 * (Q[:, :, 0] ** 2).sum(1) / a.d
            print(f"a={a.alpha:.3f} d={a.d} k={k} L/d={L.mean().item() / a.d:.6f} te={te.mean().item():.5f} "
                  f"theta={th.mean().item():.4f}+-{th.std().item() / math.sqrt(a.seeds):.4f} "
                  f"q={q.mean().item():.4f} |g|={g.norm(dim=1).max().item():.1e} {time.time() - t0:.0f}s",
                  flush=True)
        if not bool(torch.isfinite(L).all()):
            raise SystemExit(f"GD diverged at step {k}")
        Q = Q - 0.15 * g


if __name__ == "__main__":
    main()
