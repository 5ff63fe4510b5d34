"""The state and steps of :func:`stumplib.stump.trainer.train_gd`'s loop.

:class:`TrainLoop` holds every run's parameters and step size, its stop scale, the events keyed on
``beta`` (step-size marks and record scales), the masks of live and moving runs, the divergence
guard (:data:`MAX_PARAM`) and the recorded history; each step evaluates every computation group
with :func:`stumplib.stump.fast_kernel.group_grad`. :func:`stumplib.stump.trainer.train_gd` checks
the runs, lays out their corpora, drives the loop and returns its
:class:`~stumplib.stump.trainer.TrainResult`.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from stumplib.core.errors import TrainingDiverged
from stumplib.stump.fast_kernel import group_grad

if TYPE_CHECKING:
    from stumplib.stump.trainer import RunConfig

#: A run counts as diverged once ``|beta|`` or ``|b|`` exceeds this. The scales GD reaches in
#: this book are a few tens over the spacing of the examples (``beta`` of order ``1e4`` for
#: ``n ~ 2000``); at ``1e7`` neighbouring examples (spacing ``>= 1e-5`` for ``n <= 1e5``) differ by
#: ``>= 100`` in score, the attention is saturated and the loss flat in ``beta``, so a parameter
#: that big can only come from a step that overshot (``lr = 1e12`` throws ``beta`` to ``-3e8`` in
#: one step while the loss stays bounded, which the loss criterion alone does not catch).
MAX_PARAM = 1e7


class TrainLoop:
    """The state of :func:`stumplib.stump.trainer.train_gd`'s loop: every run's parameters and step
    size, its stop scale, the beta-keyed events (step-size marks and record scales,
    :class:`_Watch`), the masks of live (not diverged) and moving (not diverged, not stopped) runs,
    the divergence guard and the recorded history ``(3, R, K)`` of ``beta, b, loss``.

    Parameters
    ----------
    configs : list of RunConfig, length ``R``
        The validated runs (their starts, step sizes, stop scales, marks and record scales).
    rec : np.ndarray of int, shape ``(K,)``
        The recorded steps (:func:`stumplib.stump.trainer.record_steps`).
    max_loss_ratio : float
        A run whose loss exceeds this multiple of its first checked loss counts as diverged.
    on_diverge : str
        ``"raise"`` or ``"stop"`` (see :func:`stumplib.stump.trainer.train_gd`).
    dtype : torch.dtype
        The precision of the parameters.
    dev : torch.device
        Where they live.
    """

    def __init__(self, configs: list[RunConfig], rec: np.ndarray, max_loss_ratio: float,
                 on_diverge: str, dtype: torch.dtype, dev: torch.device) -> None:
        R = len(configs)
        self.configs, self.rec, self.dtype, self.dev = configs, rec, dtype, dev
        self.beta = torch.tensor([c.beta0 for c in configs], dtype=dtype, device=dev)
        self.b = torch.tensor([c.b0 for c in configs], dtype=dtype, device=dev)
        self.lr = torch.tensor([c.lr for c in configs], dtype=dtype, device=dev)
        self.has_stop = any(c.beta_stop is not None for c in configs)
        self.beta_stop = torch.tensor([float("inf") if c.beta_stop is None else c.beta_stop
                                       for c in configs], dtype=dtype, device=dev)
        # beta-keyed events: step-size marks and record scales, padded to (R, J + 1) with inf
        self.watch = [w for w in (_Watch([c.lr_marks for c in configs], True, dtype, dev),
                                  _Watch([c.record_scales for c in configs], False, dtype, dev))
                      if w.size]
        self.thr = self._next_threshold() if self.watch else None
        self.hist = torch.full((3, R, rec.size), float("nan"), dtype=dtype, device=dev)
        self.rec_set = {int(s): k for k, s in enumerate(rec)}
        self.alive = torch.ones(R, dtype=torch.bool, device=dev)  # not diverged
        self.moving = self.alive.clone()  # not diverged and not stopped
        self.stop_step = torch.full((R,), -1, dtype=torch.int64, device=dev)
        self.guard = _Guard(configs, self.beta, max_loss_ratio, on_diverge, self.alive, self.moving)
        #: whether runs may freeze (stop scale or on_diverge="stop"): the loop may then end early
        self.freezes = self.has_stop or on_diverge == "stop"

    def _next_threshold(self) -> torch.Tensor:
        return _next_threshold(self.watch, self.beta_stop if self.has_stop else None)

    def grad(self, groups: list[tuple[torch.Tensor | None, dict[str, Any]]]
             ) -> tuple[torch.Tensor, ...]:
        """Every run's loss and gradient, group by group.

        Parameters
        ----------
        groups : list of (torch.Tensor or None, dict)
            The computation groups: the indices of their runs (``None``: all runs) and their
            fast-kernel layouts (:func:`stumplib.stump.fast_kernel.group_grad`).

        Returns
        -------
        L, dL_dbeta, dL_db : torch.Tensor, shape ``(R,)``
        """
        if len(groups) == 1:
            return group_grad(groups[0][1], self.beta, self.b, self.alive)
        out = [torch.empty(len(self.configs), dtype=self.dtype, device=self.dev) for _ in range(3)]
        for idx, lay in groups:
            for o, v in zip(out, group_grad(lay, self.beta[idx], self.b[idx], self.alive[idx])):
                o[idx] = v
        return tuple(out)

    def events(self, t: int) -> bool:
        """Marks, record scales and stops reached at step ``t`` (in that order).

        Parameters
        ----------
        t : int
            The step.

        Returns
        -------
        bool
            Whether a mark or record scale was crossed.
        """
        crossed = False
        if self.watch and bool((self.moving & (self.beta >= self.thr)).any()):
            crossed = True
            for w in self.watch:
                w.cross(t, self.beta, self.b, self.moving, self.lr)
            self.thr = self._next_threshold()
        if self.has_stop:
            hit = self.moving & (self.beta >= self.beta_stop)
            self.stop_step = torch.where(hit, t, self.stop_step)
            self.moving &= ~hit
        return crossed

    def record(self, t: int, L: torch.Tensor) -> None:
        """Store step ``t``'s state if it is a record step (NaN for diverged runs).

        Parameters
        ----------
        t : int
            The step.
        L : torch.Tensor, shape ``(R,)``
            Every run's loss at that step.
        """
        if t in self.rec_set:
            k = self.rec_set[t]
            for i, v in enumerate((self.beta, self.b, L)):
                self.hist[i, :, k] = torch.where(self.alive, v, float("nan"))

    def repeat_frozen(self, t: int, L: torch.Tensor) -> None:
        """Every run has stopped or diverged at step ``t``: the later records repeat the frozen
        values.

        Parameters
        ----------
        t : int
            The step at which the loop ends.
        L : torch.Tensor, shape ``(R,)``
            Every run's loss at that step.
        """
        later = torch.as_tensor(self.rec > t, device=self.dev)
        for i, v in enumerate((self.beta, self.b, L)):
            self.hist[i][:, later] = torch.where(self.alive, v, float("nan"))[:, None]

    def step(self, g_beta: torch.Tensor, g_b: torch.Tensor) -> None:
        """One GD step; frozen runs keep their values (their gradient may be NaN).

        Parameters
        ----------
        g_beta, g_b : torch.Tensor, shape ``(R,)``
            Every run's gradient.
        """
        if self.freezes:
            self.beta = torch.where(self.moving, self.beta - self.lr * g_beta, self.beta)
            self.b = torch.where(self.moving, self.b - self.lr * g_b, self.b)
        else:
            self.beta = self.beta - self.lr * g_beta
            self.b = self.b - self.lr * g_b

    def run(self, groups: list[tuple[torch.Tensor | None, dict[str, Any]]], steps: int,
            check_every: int, bar: Any) -> int:
        """Steps ``0 .. steps`` (or until every run froze).

        Parameters
        ----------
        groups : list of (torch.Tensor or None, dict)
            The computation groups (see :meth:`grad`).
        steps : int
            The last step.
        check_every : int
            Steps between divergence checks (also checked at every record and event).
        bar : tqdm progress bar or None
            Advanced at every check, closed at the end.

        Returns
        -------
        int
            The step at which the loop ended.
        """
        done, last = 0, steps
        for t in range(steps + 1):
            L, g_beta, g_b = self.grad(groups)
            crossed = self.events(t)
            checked = t in self.rec_set or t % check_every == 0
            if checked or crossed:
                self.guard.check(L, self.beta, self.b, t)
                self.record(t, L)
                if bar is not None:
                    bar.update(t - done)
                    done = t
            if t == steps:
                break
            if (checked or crossed) and self.freezes and not bool(self.moving.any()):
                self.repeat_frozen(t, L)
                last = t
                break
            self.step(g_beta, g_b)
        if bar is not None:
            bar.update(last - done)
            bar.close()
        return last

    def result_fields(self, last: int) -> dict[str, Any]:
        """The fields of the loop's :class:`~stumplib.stump.trainer.TrainResult`, ended at step
        ``last``.

        Parameters
        ----------
        last : int
            The step at which the loop ended (:meth:`run`).

        Returns
        -------
        dict
            ``configs, steps, beta, b, loss, diverged_at, stop_step, last_step`` and the marks' and
            record scales' arrays (``mark_*``, ``scale_*``) where runs have them.
        """
        h = self.hist.cpu().numpy()
        events = {}
        for w in self.watch:
            events.update(w.arrays())
        return dict(configs=self.configs, steps=self.rec, beta=h[0], b=h[1], loss=h[2],
                    diverged_at=self.guard.diverged_at, stop_step=self.stop_step.cpu().numpy(),
                    last_step=last, **events)


class _Guard:
    """The divergence check of :func:`stumplib.stump.trainer.train_gd`: non-finite loss or
    parameters, ``|beta|`` or ``|b|`` above :data:`MAX_PARAM`, ``beta`` turned from positive to
    negative, or a loss above ``max_loss_ratio`` times the first checked one.
    ``on_diverge="raise"`` raises :class:`TrainingDiverged` naming the first bad run; ``"stop"``
    freezes bad runs (clearing them in the shared ``alive`` and ``moving`` masks) and notes the step
    in ``diverged_at``."""

    def __init__(self, configs: list[RunConfig], beta0: torch.Tensor, max_loss_ratio: float,
                 on_diverge: str, alive: torch.Tensor, moving: torch.Tensor) -> None:
        self.configs, self.max_loss_ratio, self.on_diverge = configs, max_loss_ratio, on_diverge
        self.positive0 = beta0 > 0
        self.alive, self.moving = alive, moving
        self.L0: torch.Tensor | None = None
        self.diverged_at = np.full(len(configs), -1, dtype=np.int64)

    def check(self, L: torch.Tensor, beta: torch.Tensor, b: torch.Tensor, t: int) -> None:
        if self.L0 is None:
            self.L0 = L.clone()
        finite = torch.isfinite(L) & torch.isfinite(beta) & torch.isfinite(b)
        big = (beta.abs() > MAX_PARAM) | (b.abs() > MAX_PARAM)
        flipped = self.positive0 & (beta < 0)
        worse = L > self.max_loss_ratio * self.L0
        bad = self.alive & (~finite | big | flipped | worse)
        if not bool(bad.any()):
            return
        rs = torch.nonzero(bad).flatten().tolist()
        if self.on_diverge == "stop":
            self.diverged_at[rs] = t
            self.alive[bad] = False
            self.moving[bad] = False
            return
        r = rs[0]
        c = self.configs[r]
        why = ("non-finite loss or parameters" if not bool(finite[r]) else
               f"|beta| or |b| above {MAX_PARAM:g}" if bool(big[r]) else
               f"beta turned negative (beta0 = {c.beta0:g})" if bool(flipped[r]) else
               f"loss above {self.max_loss_ratio:g} x its initial value")
        raise TrainingDiverged(
            f"run {r} (m={c.m}, n={c.n}, seed={c.seed}) diverged at step {t} with step size "
            f"lr={c.lr:g} ({why}): beta={beta[r].item():.3g}, b={b[r].item():.3g}, "
            f"loss={L[r].item():.3g} (initial loss {self.L0[r].item():.3g}). "
            f"Use a smaller lr or a larger-resolution start (beta0, b0).")


class _Watch:
    """Per-run ``beta`` thresholds of one kind (``lr_marks`` when ``sets_lr``, else
    ``record_scales``) and what happened at them: the thresholds padded to ``(R, J + 1)`` with
    ``inf``, each run's next one, and the step and parameters at each threshold reached."""

    def __init__(self, per_run: list, sets_lr: bool, dtype: torch.dtype, dev: torch.device) -> None:
        R = len(per_run)
        J = max((len(v) for v in per_run if v), default=0)
        self.size, self.sets_lr = J, sets_lr
        if not J:
            return
        at = np.full((R, J + 1), np.inf)
        lr = np.full((R, J + 1), np.nan)
        for r, v in enumerate(per_run):
            for j, e in enumerate(v or ()):
                if sets_lr:
                    at[r, j], lr[r, j] = e
                else:
                    at[r, j] = e
        self.at = torch.as_tensor(at, dtype=dtype, device=dev)
        self.lr = torch.as_tensor(lr, dtype=dtype, device=dev)
        self.nxt = torch.zeros(R, dtype=torch.int64, device=dev)
        self.step = torch.full((R, J), -1, dtype=torch.int64, device=dev)
        self.beta = torch.full((R, J), float("nan"), dtype=dtype, device=dev)
        self.b = torch.full((R, J), float("nan"), dtype=dtype, device=dev)

    def next(self) -> torch.Tensor:
        """Each run's next threshold (``inf`` when none is left)."""
        return self.at.gather(1, self.nxt[:, None])[:, 0]

    def cross(self, t: int, beta: torch.Tensor, b: torch.Tensor, moving: torch.Tensor,
              lr: torch.Tensor) -> None:
        """Record every threshold that the moving runs have reached at step ``t`` (several in one
        step if ``beta`` jumped over them) and, for marks, switch to the step of the last one
        reached."""
        while True:
            hit = moving & (beta >= self.next())
            rows = torch.nonzero(hit).flatten()
            if rows.numel() == 0:
                return
            cols = self.nxt[rows]
            self.step[rows, cols] = t
            self.beta[rows, cols] = beta[rows]
            self.b[rows, cols] = b[rows]
            if self.sets_lr:
                lr[rows] = self.lr[rows, cols]
            self.nxt[rows] += 1

    def arrays(self) -> dict[str, np.ndarray]:
        kind = "mark" if self.sets_lr else "scale"
        return {f"{kind}_step": self.step.cpu().numpy(), f"{kind}_beta": self.beta.cpu().numpy(),
                f"{kind}_b": self.b.cpu().numpy()}


def _next_threshold(watch: list[_Watch], beta_stop: torch.Tensor | None) -> torch.Tensor:
    """The smallest scale at which some event of each run happens next (its next mark or record
    scale, or its stop: reaching it ends the loop early once every run has stopped)."""
    thr = watch[0].next()
    for w in watch[1:]:
        thr = torch.minimum(thr, w.next())
    return thr if beta_stop is None else torch.minimum(thr, beta_stop)
