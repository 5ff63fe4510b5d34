"""Benchmark: the batched GD trainer per element-step, against one ``exp``, the trainer it replaced
and a naive per-run autograd loop.

A case ``R x m x n`` is ``R`` runs of full-batch GD, each on its own corpus of ``m`` tasks with
``n`` examples (float64), from the default start of :class:`stumplib.trainer.RunConfig`
(``beta0 = b0 = 20``, ``lr = 1e3``); ``R x m x n @ B`` starts at ``beta0 = B``, ``b0 = 0.85 B``
with ``lr = 1e6`` instead (a large scale, where the fast kernel drops the exponential tail), and a
suffix ``/LR`` sets the step size (``64x32x32/1e2``: at ``lr = 1e3`` some of those small corpora
oscillate, and rounding differences grow by 10x per step, so no two codes agree to 1e-12). For each
case we report nanoseconds per element-step (``R m n`` elements, one step), the median over
``--repeats`` timings taken in turn (so that the load of a shared machine affects all columns
alike):

* ``trainer``: :func:`stumplib.trainer.train_gd` (its time minus the time to draw and lay out the
  corpora, measured separately);
* ``exp``: one ``torch.exp(x, out=buf)`` over a float64 array of ``R m n`` elements (as many calls
  as trainer steps in one timing), measured in the same loop: the ratio ``trainer / exp`` is the
  cost of a step in units of one exponential;
* ``replaced``: the trainer before issue 12 (its fused kernel, kept below as :func:`replaced_train`,
  about 13 passes over the ``(R, m, n)`` arrays);
* ``naive``: per-run autograd GD (``stumplib.model.estimate``, ``autograd.grad``, an update).

Before timing, each case checks that the trainer's parameters after ``--steps`` steps equal those of
the replaced trainer to 1e-12 (relative). On CUDA, timings are synchronised and the table also gives
the achieved bandwidth of the trainer, counting :data:`BYTES_PER_ELEMENT` bytes moved per
element-step by the fast kernel.

Usage::

    python scripts/bench_trainer.py                 # CPU, one thread, prints a markdown table
    python scripts/bench_trainer.py --write         # also writes scripts/BENCH_trainer.md
    python scripts/bench_trainer.py --device cuda
"""
from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from stumplib.device import resolve_device  # noqa: E402
from stumplib.model import estimate  # noqa: E402
from stumplib.tasks import sample_tasks  # noqa: E402
from stumplib.trainer import RunConfig, _dense_corpora, train_gd  # noqa: E402

#: bytes moved per element-step by the fast kernel: read dx, write the scores (16); exp in place
#: (16); the batched product reads the weights and six float64 features (56)
BYTES_PER_ELEMENT = 88

CASES = "64x32x32/1e2,16x128x128,4x256x256,1x1024x1024,4x256x256@2000"


def _sync(dev: torch.device) -> None:
    if dev.type == "cuda":
        torch.cuda.synchronize(dev)


# ---------------------------------------------------------------------------------------------
# the trainer before issue 12 (stumplib/trainer.py at commit 82fc7c9), kept as the reference
# ---------------------------------------------------------------------------------------------
def _dot(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return torch.einsum("...n,...n->...", a, b)


def _replaced_moments(x, y, beta, b, ny, work):
    """The replaced fused kernel: max-shifted softmax, two-pass centred moments, two buffers."""
    shape = torch.broadcast_shapes(x.shape, beta.shape + (1,), b.shape + (1,))
    if len(work) == 2 and work[0].shape == shape:
        s_buf, d_buf = work
    else:
        s_buf = torch.empty(shape, dtype=x.dtype, device=x.device)
        d_buf = torch.empty(shape, dtype=x.dtype, device=x.device)
        work[:] = [s_buf, d_buf]
    s = torch.mul(y, b[..., None], out=s_buf).addcmul_(x, beta[..., None], value=-1.0)
    w = s.sub_(s.amax(-1, keepdim=True)).exp_()
    Z = w.sum(-1)
    f = _dot(w, x) / Z
    p_pos = _dot(w, y) / Z
    dx = torch.sub(x, f[..., None], out=d_buf)
    wdx = w.mul_(dx)
    var = _dot(wdx, dx) / Z
    cov = torch.where(p_pos > 0.5, -_dot(wdx, ny), _dot(wdx, y)) / Z
    return f, -var, cov


def replaced_corpora(configs: list[RunConfig], dev: torch.device) -> tuple[torch.Tensor, ...]:
    out = [sample_tasks(c.m, c.n, c.tau_lo, c.tau_hi, seed=c.seed, device=dev) for c in configs]
    tau, x, y = (torch.stack([o[i] for o in out]) for i in range(3))
    return tau, x, y, 1.0 - y


def replaced_train(configs: list[RunConfig], steps: int, dev: torch.device) -> torch.Tensor:
    """The replaced trainer's step loop (one dense group, loss computed at every step as it did;
    no records or checks); returns the final ``(beta, b)`` of every run, shape ``(R, 2)``."""
    tau, x, y, ny = replaced_corpora(configs, dev)
    beta = torch.tensor([c.beta0 for c in configs], dtype=torch.float64, device=dev)
    b = torch.tensor([c.b0 for c in configs], dtype=torch.float64, device=dev)
    lr = torch.tensor([c.lr for c in configs], dtype=torch.float64, device=dev)
    m, work = tau.shape[-1], []
    for _ in range(steps):
        f, dfb, dfbb = _replaced_moments(x, y, beta[:, None], b[:, None], ny, work)
        e = f - tau
        _ = (e * e).sum(-1) / m
        beta = beta - lr * (2 * (e * dfb).sum(-1) / m)
        b = b - lr * (2 * (e * dfbb).sum(-1) / m)
    return torch.stack([beta, b], -1)


# ---------------------------------------------------------------------------------------------
def naive_loop(configs: list[RunConfig], steps: int, dev: torch.device) -> float:
    """Per-run autograd GD; returns the time of the steps alone (corpora drawn beforehand)."""
    data = [sample_tasks(c.m, c.n, c.tau_lo, c.tau_hi, seed=c.seed, device=dev) for c in configs]
    _sync(dev)
    t0 = time.perf_counter()
    for c, (tau, x, y) in zip(configs, data):
        p = torch.tensor([c.beta0, c.b0], dtype=torch.float64, device=dev, requires_grad=True)
        for _ in range(steps):
            loss = ((estimate(x, y, p[0], p[1]) - tau) ** 2).mean()
            (g,) = torch.autograd.grad(loss, p)
            with torch.no_grad():
                p -= c.lr * g
    _sync(dev)
    return time.perf_counter() - t0


def trainer(configs: list[RunConfig], steps: int, dev: torch.device) -> torch.Tensor:
    res = train_gd(configs, steps, device=dev, progress=False, n_records=2, check_every=10 ** 9)
    return torch.tensor([res.final_beta.tolist(), res.final_b.tolist()], dtype=torch.float64).T


def timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def parse_case(spec: str) -> tuple[int, int, int, float | None, float | None]:
    """``R x m x n[@beta0][/lr]`` -> ``(R, m, n, beta0 or None, lr or None)``."""
    spec, _, lr = spec.partition("/")
    shape, _, start = spec.partition("@")
    R, m, n = (int(v) for v in shape.lower().split("x"))
    return R, m, n, (float(start) if start else None), (float(lr) if lr else None)


def configs_of(R: int, m: int, n: int, start: float | None, lr: float | None) -> list[RunConfig]:
    if start is None:
        return [RunConfig(m, n, seed=s, lr=lr or RunConfig.lr) for s in range(R)]
    return [RunConfig(m, n, seed=s, lr=lr or 1e6, beta0=start, b0=0.85 * start) for s in range(R)]


def bench_case(R: int, m: int, n: int, start: float | None, lr: float | None, a, dev: torch.device) -> dict:
    configs = configs_of(R, m, n, start, lr)
    E = R * m * n
    # the same parameters as the replaced trainer after `steps` steps
    new, old = trainer(configs, a.steps, dev), replaced_train(configs, a.steps, dev).cpu()
    err = float(((new - old).abs() / old.abs()).max())
    if err > 1e-12:
        raise RuntimeError(f"{R}x{m}x{n}: trainer and replaced trainer differ by {err:.2e} (relative)")
    x = torch.rand(R, m, n, dtype=torch.float64, device=dev)
    out = torch.empty_like(x)

    def sync_timed(fn) -> float:
        _sync(dev)
        t0 = time.perf_counter()
        fn()
        _sync(dev)
        return time.perf_counter() - t0

    rows = {k: [] for k in ("exp", "setup", "trainer", "rsetup", "replaced", "naive")}
    naive_steps = max(1, min(a.steps, int(2e7 // E)))  # the naive loop is slow: fewer steps
    for rep in range(a.repeats + 1):  # the first round warms up
        # as many exps as trainer steps, in one timing: both equally exposed to a busy machine
        t = {"exp": sync_timed(lambda: [torch.exp(x, out=out) for _ in range(a.steps)]) / a.steps,
             "setup": sync_timed(lambda: _dense_corpora(configs, dev, torch.float64)),
             "trainer": sync_timed(lambda: trainer(configs, a.steps, dev)),
             "rsetup": sync_timed(lambda: replaced_corpora(configs, dev)),
             "replaced": sync_timed(lambda: replaced_train(configs, a.steps, dev)),
             "naive": naive_loop(configs, naive_steps, dev) if not a.no_naive else float("nan")}
        if rep:
            for k, v in t.items():
                rows[k].append(v)
    med = {k: statistics.median(v) for k, v in rows.items()}
    ns = {"exp": med["exp"] / E * 1e9,
          "trainer": (med["trainer"] - med["setup"]) / (a.steps * E) * 1e9,
          "replaced": (med["replaced"] - med["rsetup"]) / (a.steps * E) * 1e9,
          "naive": med["naive"] / (naive_steps * E) * 1e9}
    ns["gbs"] = BYTES_PER_ELEMENT / ns["trainer"]  # bytes per ns = GB/s
    return ns


def main(argv: list[str] | None = None) -> str:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--threads", type=int, default=1, help="torch intra-op threads on CPU")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--no-naive", action="store_true", help="skip the (slow) naive autograd loop")
    ap.add_argument("--write", action="store_true", help="write scripts/BENCH_trainer.md")
    ap.add_argument("--cases", default=CASES, help="comma-separated R x m x n[@beta0][/lr]")
    a = ap.parse_args(argv)
    dev = resolve_device(a.device)
    if a.threads < 1 or a.repeats < 1 or a.steps < 1:
        raise ValueError("threads, repeats and steps must be >= 1")
    torch.set_num_threads(a.threads)
    cuda = dev.type == "cuda"
    head = ("| R x m x n (start) | trainer ns / element-step | exp ns / element | trainer / exp "
            "| replaced ns | speed-up vs replaced | naive ns | speed-up vs naive |"
            + (" trainer GB/s |" if cuda else ""))
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for spec in a.cases.split(","):
        R, m, n, start, lr = parse_case(spec)
        ns = bench_case(R, m, n, start, lr, a, dev)
        label = f"{R} x {m} x {n}" + (f" (beta0 = {start:g}" if start else " (default") + (
            f", lr = {lr:g})" if lr else ")")
        row = (f"| {label} | {ns['trainer']:.2f} | {ns['exp']:.2f} | {ns['trainer'] / ns['exp']:.2f}x "
               f"| {ns['replaced']:.2f} | {ns['replaced'] / ns['trainer']:.1f}x | {ns['naive']:.1f} "
               f"| {ns['naive'] / ns['trainer']:.0f}x |" + (f" {ns['gbs']:,.0f} |" if cuda else ""))
        lines.append(row)
        print(row, flush=True)
    name = torch.cuda.get_device_name(dev) if cuda else (platform.processor() or platform.machine())
    load = f"; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores" if hasattr(os, "getloadavg") else ""
    meta = (f"Device: {dev} ({name}); torch {torch.__version__}; float64; {a.threads} intra-op "
            f"thread(s) on CPU{load}; {a.steps} steps per timing; median of {a.repeats} rounds after a "
            f"warm-up round; trainer parameters checked equal to the replaced trainer's to 1e-12.")
    out = "\n".join(lines) + f"\n\n{meta}\n"
    print(out)
    if a.write:
        (ROOT / "scripts" / "BENCH_trainer.md").write_text(
            "# Trainer benchmark\n\n"
            "`python scripts/bench_trainer.py --write`: nanoseconds per element-step (one step of GD "
            "over one example of one task of one run; lower is better). *trainer* is "
            "`stumplib.trainer.train_gd`; *exp* one float64 `torch.exp(x, out=buf)` per element, "
            "timed in the same loop; *replaced* the trainer before issue 12; *naive* per-run "
            "autograd GD. Every case starts from `RunConfig`'s default (`beta0 = b0 = 20`) unless a "
            "start `beta0` is given (then `b0 = 0.85 beta0`, `lr = 1e6`) or a step size.\n\n" + out + READING)
    return out


READING = """
**Reading.** A step of the trainer is one scaling pass and one `exp` pass over the `(R, m, n)`
corpus (sorted once, positives from the left, negatives from the right), one batched matrix product
of the weights with six fixed float64 features per example (each label group's `[1, dx, dx^2]`),
then about forty small operations per task. On one CPU thread the `exp` pass with its scaling costs
about 1.3 `exp`, the product about 1.4 to 1.7 (it reads 56 bytes per example) and the per-task
operations about 0.5 for `n = 128`: about 3 to 3.5 `exp` per element-step for the kernel, more for
the whole step on a loaded machine and for small `n`, where fixed per-step costs dominate (for
`32 x 32` corpora the replaced trainer is faster). The target of 2.5 `exp` per element-step is not
reached at the default start; the batched product and the per-task operations are what is left. As `beta` grows a step gets much cheaper: terms
more than `e^-50` below their group's largest are dropped, so at `beta0 = 2000` a step touches a few
percent of the columns and costs less than two `exp` per element. `torch.compile` of a fused kernel
(one loop: `exp` and six masked sums) measured about 1.3 `exp` for `1 x 1024 x 1024` but was no
faster for `16 x 128 x 128`, after 5 to 35 s of compilation per process here, so the eager code path
is kept (the same on CPU and CUDA). Timings on a small shared CPU are noisy (here the same `exp` took
1.7 to 3.5 ns in one run); the ratios within a row are the meaningful part.
"""


if __name__ == "__main__":
    main()
