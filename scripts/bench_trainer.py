"""Benchmark: the batched GD trainer per element-step, against one ``exp``, the trainer it replaced
and a naive per-run autograd loop.

A case ``R x m x n`` is ``R`` runs of full-batch GD, each on its own corpus of ``m`` tasks with
``n`` examples (float64), from the default start of :class:`stumplib.stump.trainer.RunConfig`
(``beta0 = b0 = 20``, ``lr = 1e3``); ``R x m x n @ B`` starts at ``beta0 = B``, ``b0 = 0.85 B``
with ``lr = 1e6`` instead (a large scale, where the fast kernel drops the exponential tail), and a
suffix ``/LR`` sets the step size (``64x32x32/1e2``: at ``lr = 1e3`` some of those small corpora
oscillate, and rounding differences grow by 10x per step, so no two codes agree to 1e-12). For each
case we report nanoseconds per element-step (``R m n`` elements, one step), the median over
``--repeats`` timings taken in turn (so that the load of a shared machine affects all columns
alike):

* ``trainer``: :func:`stumplib.stump.trainer.train_gd` (its time minus the time to draw and lay out the
  corpora, measured separately);
* ``exp``: one ``torch.exp(x, out=buf)`` over a float64 array of ``R m n`` elements (as many calls
  as trainer steps in one timing), measured in the same loop: the ratio ``trainer / exp`` is the
  cost of a step in units of one exponential;
* ``direct``: the same trainer with every step's group sums computed directly (one ``exp`` pass and
  one batched product per step), i.e. without the expansion about per-run anchors that replaces
  that pass on most steps;
* ``replaced``: the trainer before issue 12 (its step loop, kept below as :func:`replaced_train`,
  about 13 passes over the ``(R, m, n)`` arrays);
* ``naive``: per-run autograd GD (``stumplib.stump.model.estimate``, ``autograd.grad``, an update).

Before timing, each case checks that the trainer's parameters after ``--steps`` steps equal those of
the replaced trainer to 1e-12 (relative). On CUDA, timings are synchronised and the table also gives
the achieved bandwidth of the direct kernel, counting :data:`BYTES_PER_ELEMENT` bytes moved per
element-step (the expansion's steps move far fewer bytes; their cost is per task, not per example).

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

from stumplib.core.device import resolve_device# noqa: E402
from stumplib.stump.model import estimate# noqa: E402
from stumplib.stump.tasks import sample_tasks# noqa: E402
import stumplib.stump.fast_kernel as fast_kernel  # noqa: E402
from stumplib.stump.corpus_grad import corpus_moments  # noqa: E402
from stumplib.stump.fast_kernel import dense_layout  # noqa: E402
from stumplib.stump.trainer import RunConfig, TrainOptions, train_gd  # noqa: E402

#: bytes moved per element-step by the fast kernel: read dx, write the scores (16); exp in place
#: (16); the batched product reads the weights and six float64 features (56)
BYTES_PER_ELEMENT = 88

CASES = "64x32x32/1e2,16x128x128,4x256x256,1x1024x1024,4x256x256@2000"


def _sync(dev: torch.device) -> None:
    if dev.type == "cuda":
        torch.cuda.synchronize(dev)


# ---------------------------------------------------------------------------------------------
# the trainer before issue 12 (stumplib/trainer.py at commit 82fc7c9), kept as the reference: its
# fused kernel lives on as stumplib.stump.corpus_grad.corpus_moments
# ---------------------------------------------------------------------------------------------
def replaced_corpora(configs: list[RunConfig], dev: torch.device) -> tuple[torch.Tensor, ...]:
    out = [sample_tasks(c.m, c.n, c.prior, seed=c.seed, device=dev) for c in configs]
    tau, x, y = (torch.stack([o[i] for o in out]) for i in range(3))
    return tau, x, y, 1.0 - y


def replaced_train(configs: list[RunConfig], steps: int, dev: torch.device, *, with_loss: bool = False
                   ) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
    """The replaced trainer's step loop (one dense group, its fused kernel, loss computed at every
    step as it did; no records or checks); returns the final ``(beta, b)`` of every run, shape
    ``(R, 2)``, and with ``with_loss`` also the loss at those parameters, shape ``(R,)``.

    Its kernel is :func:`stumplib.stump.corpus_grad.corpus_moments` (max-shifted softmax, two-pass
    centred moments, two buffers), which the library keeps for
    :func:`stumplib.stump.corpus_grad.corpus_grad`; the trainer itself now uses the sorted fast kernel
    (:mod:`stumplib.stump.fast_kernel`). ``tests/stump/test_trainer.py`` imports this function as
    the reference the fast trainer must match.
    """
    tau, x, y, ny = replaced_corpora(configs, dev)
    beta = torch.tensor([c.beta0 for c in configs], dtype=torch.float64, device=dev)
    b = torch.tensor([c.b0 for c in configs], dtype=torch.float64, device=dev)
    lr = torch.tensor([c.lr for c in configs], dtype=torch.float64, device=dev)
    m, work = tau.shape[-1], []
    for t in range(steps + 1):
        f, dfb, dfbb = corpus_moments(x, y, beta[:, None], b[:, None], ny, work)
        e = f - tau
        loss = (e * e).sum(-1) / m
        if t == steps:
            break
        beta = beta - lr * (2 * (e * dfb).sum(-1) / m)
        b = b - lr * (2 * (e * dfbb).sum(-1) / m)
    final = torch.stack([beta, b], -1)
    return (final, loss) if with_loss else final


# ---------------------------------------------------------------------------------------------
def naive_loop(configs: list[RunConfig], steps: int, dev: torch.device) -> float:
    """Per-run autograd GD; returns the time of the steps alone (corpora drawn beforehand)."""
    data = [sample_tasks(c.m, c.n, c.prior, seed=c.seed, device=dev) for c in configs]
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
    res = train_gd(configs, steps, device=dev, progress=False,
                   options=TrainOptions(n_records=2, check_every=10 ** 9))
    return torch.tensor([res.final_beta.tolist(), res.final_b.tolist()], dtype=torch.float64).T


def direct_trainer(configs: list[RunConfig], steps: int, dev: torch.device) -> torch.Tensor:
    """The trainer with every step's sums computed directly (one ``exp`` pass and one product per
    step, no expansion about anchors): the kernel the expansion replaces on most steps."""
    series = fast_kernel._series_sums
    fast_kernel._series_sums = lambda lay, beta: fast_kernel._direct_sums(lay["dx_k"], lay["feat_k"],
                                                                          beta)
    try:
        return trainer(configs, steps, dev)
    finally:
        fast_kernel._series_sums = series


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

    rows = {k: [] for k in ("exp", "setup", "trainer", "direct", "rsetup", "replaced", "naive")}
    naive_steps = max(1, min(a.steps, int(2e7 // E)))  # the naive loop is slow: fewer steps
    for rep in range(a.repeats + 1):  # the first round warms up
        # as many exps as trainer steps, in one timing: both equally exposed to a busy machine
        t = {"exp": sync_timed(lambda: [torch.exp(x, out=out) for _ in range(a.steps)]) / a.steps,
             "setup": sync_timed(lambda: dense_layout(configs, dev, torch.float64)),
             "trainer": sync_timed(lambda: trainer(configs, a.steps, dev)),
             "direct": sync_timed(lambda: direct_trainer(configs, a.steps, dev)),
             "rsetup": sync_timed(lambda: replaced_corpora(configs, dev)),
             "replaced": sync_timed(lambda: replaced_train(configs, a.steps, dev)),
             "naive": naive_loop(configs, naive_steps, dev) if not a.no_naive else float("nan")}
        if rep:
            for k, v in t.items():
                rows[k].append(v)
    med = {k: statistics.median(v) for k, v in rows.items()}
    ns = {"exp": med["exp"] / E * 1e9,
          "trainer": (med["trainer"] - med["setup"]) / (a.steps * E) * 1e9,
          "direct": (med["direct"] - med["setup"]) / (a.steps * E) * 1e9,
          "replaced": (med["replaced"] - med["rsetup"]) / (a.steps * E) * 1e9,
          "naive": med["naive"] / (naive_steps * E) * 1e9}
    ns["gbs"] = BYTES_PER_ELEMENT / ns["direct"]  # bytes per ns = GB/s, of the direct kernel
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
            "| direct ns | direct / exp | replaced ns | speed-up vs replaced | naive ns | speed-up vs naive |"
            + (" direct GB/s |" if cuda else ""))
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for spec in a.cases.split(","):
        R, m, n, start, lr = parse_case(spec)
        ns = bench_case(R, m, n, start, lr, a, dev)
        label = f"{R} x {m} x {n}" + (f" (beta0 = {start:g}" if start else " (default") + (
            f", lr = {lr:g})" if lr else ")")
        row = (f"| {label} | {ns['trainer']:.2f} | {ns['exp']:.2f} | {ns['trainer'] / ns['exp']:.2f}x "
               f"| {ns['direct']:.2f} | {ns['direct'] / ns['exp']:.2f}x | {ns['replaced']:.2f} | {ns['replaced'] / ns['trainer']:.1f}x | {ns['naive']:.1f} "
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
            "`stumplib.stump.trainer.train_gd`; *exp* one float64 `torch.exp(x, out=buf)` per element, "
            "timed in the same loop; *replaced* the trainer before issue 12; *naive* per-run "
            "autograd GD. Every case starts from `RunConfig`'s default (`beta0 = b0 = 20`) unless a "
            "start `beta0` is given (then `b0 = 0.85 beta0`, `lr = 1e6`) or a step size.\n\n" + out + READING)
    return out


READING = """
**Reading.** The trainer's step (*trainer*) mostly needs no `exp` at all. Within a task only six
sums matter (each label group's `sum dx^k e^(-beta dx)`, `k = 0, 1, 2`), and they are smooth in
`beta`: each run keeps moments `sum dx^j e^(-beta_a dx)`, `j <= 23`, at an anchor `beta_a` and
expands about it (`stumplib.stump.fast_kernel._series_sums`; truncation below 1e-16 relative, parameters equal
to the direct kernel's to about 1e-15 after 5000 steps). A step is then one small batched product
per task plus about forty small operations per task; an anchor costs about eight passes of the
direct kernel and lasts while `|beta - beta_a| max(dx) <= 1` (placed ahead of `beta`, in the
direction it moves). In these 100-step timings from the default start, where `beta` moves fastest,
each run is anchored about four times; longer runs amortise anchors further. The *direct* column is
the kernel it replaces: one scaling pass and one `exp` pass over the `(R, m, n)` corpus (sorted once),
one batched product with six fixed float64 features per example (56 bytes read), the same per-task
operations: about 2.5 to 3 `exp` per element-step on one thread. For small corpora (`32 x 32`)
fixed per-step costs dominate and the direct kernel is used (the expansion starts at 48 kept
columns and 4096 elements per run). At `beta0 = 2000` the tail of terms more than `e^-50` below
their group's largest is dropped, so a step touches a few percent of the columns. `torch.compile`
of a fused direct kernel (one loop: `exp` and six masked sums) measured 1.2 to 3.1 `exp` per
element (kernel alone, depending on shape and layout), after 2 to 6 s of compilation per process; the expansion is
cheaper than any one-`exp`-per-element kernel and needs no compiler, so the eager code path is kept
(the same on CPU and CUDA). Timings on a small shared CPU are noisy; the ratios within a row are
the meaningful part.
"""


if __name__ == "__main__":
    main()
