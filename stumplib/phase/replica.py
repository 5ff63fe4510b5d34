"""The replica-symmetric fixed-point equations (state evolution) of the tied rank-one attention
layer (Cui et al., arXiv:2402.03902, Result 4.2).

The fixed point of eight scalar equations describes the global (or a local) minimiser of the
empirical risk in the limit ``d, n -> infinity`` with ``alpha = n / d`` fixed. Overlaps (the published
files' normalisation, ``rho = sigma^2``):

- ``q = sigma^2 |Q|^2 / d``   (variance of a student pre-activation's noise part),
- ``m = p_1 . Q / sqrt(d)``   (positional overlap),
- ``theta = sigma^2 Q* . Q / d`` (semantic overlap; the empirical ``Q* . Q / d`` is ``theta / sigma^2``),
- ``V``                       (the "variance" of the estimator, conjugate to ``V_hat``).

Conjugate updates are Gaussian averages over ``xi, Y ~ N(0, I_2)`` of a two-dimensional proximal
problem (see :func:`proximal`), computed here with a tensor Gauss-Hermite rule over the four
Gaussian variables, all quadrature nodes, all starts and all ``alpha`` values at once (numpy,
float64). The proximal problem is not convex: it is solved by a safeguarded Newton method
(Hessian shifted to be positive definite, backtracking line search) from several starts, keeping
the lowest value.

Per-row reduction used throughout: the softmax of the 2x2 score matrix ``x x^T`` has rows
``(s_l, 1 - s_l)`` with ``s_l = sigmoid(x_l (x_1 - x_2))``, and the teacher's rows are
``(t_l, 1 - t_l)`` with ``t_l = (1 - omega) sigmoid(u_l (u_1 - u_2)) + omega A_l1`` (rows of ``A``
sum to one), so ``|S - T|_F^2 = 2 sum_l (s_l - t_l)^2`` and the per-sample loss
``|y_hat - y|^2 / (2 d)`` tends to ``ell = sigma^2 sum_l (s_l - t_l)^2``.

"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.special import expit

from stumplib.core.validation import check_choice, check_grid, check_int, check_real
from stumplib.phase.proximal import proximal, proximal_bfgs
from stumplib.phase.quadrature import RULES, check_n_nodes, quadrature_4d
from stumplib.phase.setting import (
    DEFAULT_A,
    MappingResult,
    PhaseModel,
    StateEvolutionError,
    as_model,
    check_alphas,
    check_model,
    teacher_rows,
)

# ----------------------------------------------------------------------------------------------
# one step of the state evolution (batched over alphas)
# ----------------------------------------------------------------------------------------------
def geometry(q: np.ndarray, m: np.ndarray, theta: np.ndarray, sigma: float, nodes: np.ndarray):
    """Student centres and teacher pre-activations at the quadrature nodes.

    Parameters
    ----------
    q, m, theta : (A,) overlaps (published normalisation).
    sigma : the tokens' noise scale.
    nodes : (K, 4) or (A, K, 4) standard normal nodes ``(xi_1, xi_2, Y_1, Y_2)``.

    Returns
    -------
    (center, u, vstar, xi, Y): centres ``sqrt(q) xi + (m, -m)`` (A, K, 2), teacher pre-activations
    ``u = V* Y + theta xi / sqrt(q)`` (A, K, 2), ``V* = sqrt(sigma^2 - theta^2 / q)`` (A,), and the
    node components ``xi``, ``Y`` (K or A, K, 2).
    """
    rho = sigma * sigma
    sq = np.sqrt(q)[:, None, None]
    vstar2 = rho - theta ** 2 / q
    if np.any(vstar2 < -1e-12):
        raise StateEvolutionError("theta^2 > rho q: the overlaps left the admissible region "
                                  "(|theta| <= sigma sqrt(q))")
    vstar = np.sqrt(np.maximum(vstar2, 1e-300))[:, None, None]
    if nodes.ndim == 2:
        nodes = nodes[None]
    xi, Y = nodes[..., 0:2], nodes[..., 2:4]
    center = sq * xi + np.stack([m, -m], -1)[:, None, :]
    u = vstar * Y + (theta / np.sqrt(q))[:, None, None] * xi
    return center, u, vstar[:, 0, 0], xi, Y


@dataclass(frozen=True)
class UpdateOptions:
    """How :func:`se_update` averages and solves its proximal problems: one frozen object, checked
    where it is built.

    Attributes
    ----------
    n_nodes : int
        Size of the rule ``rule``, see :func:`quadrature_4d` (default 10).
    rule : str
        The Gaussian quadrature, see :func:`quadrature_4d` (default ``"gauss-hermite"``).
    nodes : numpy.ndarray, shape ``(K, 4)`` or ``(A, K, 4)``, optional
        An explicit rule instead of ``rule, n_nodes``: standard normal nodes ``(xi_1, xi_2, Y_1,
        Y_2)``, one rule for all rows or one per row (e.g. independent scramblings).
    weights : numpy.ndarray, shape ``(K,)`` or ``(A, K)``, optional
        The weights of ``nodes`` (each rule's summing to one); required with ``nodes``.
    tol : float
        Stopping rule of the proximal Newton runs, ``|grad G| <= tol (1 + 1/V)`` (default 1e-10).
    restart : bool
        Also start from the centre and the origin (default True; ``False`` with a ``warm``: only
        from ``warm``).
    match_starts : bool
        Also start the proximal problems from the two matching points (with ``restart`` or without
        ``warm``; default True).
    with_test_error : bool
        Also return the test error at the input overlaps (with the same rule; default True).
    minimiser : str
        ``"newton"`` (default; :func:`proximal`, the global minimiser over its starts) or ``"bfgs"``
        (:func:`proximal_bfgs`, the authors' minimiser, one node at a time: slow; ``warm``,
        ``restart``, ``match_starts`` and ``tol`` are then ignored).

    Examples
    --------
    >>> UpdateOptions(n_nodes=12, with_test_error=False).rule
    'gauss-hermite'
    """

    n_nodes: int = 10
    rule: str = "gauss-hermite"
    nodes: np.ndarray | None = None
    weights: np.ndarray | None = None
    tol: float = 1e-10
    restart: bool = True
    match_starts: bool = True
    with_test_error: bool = True
    minimiser: str = "newton"

    def __post_init__(self) -> None:
        object.__setattr__(self, "minimiser",
                           check_choice("minimiser", self.minimiser, ("newton", "bfgs")))


#: :func:`se_update`'s default options
DEFAULT_UPDATE_OPTIONS = UpdateOptions()


def se_update(alpha: Any, q: Any, m: Any, V: Any, theta: Any, *, model: PhaseModel,
              warm: np.ndarray | None = None,
              options: UpdateOptions = DEFAULT_UPDATE_OPTIONS) -> dict[str, np.ndarray]:
    """One undamped update of the state evolution (overlaps -> conjugates -> overlaps).

    Parameters
    ----------
    alpha : float or array_like, shape ``(A,)``
        Sample ratios ``n / d`` (> 0).
    q, m, V, theta : float or array_like, shape ``(A,)``
        The overlaps in the published normalisation (``q > 0``, ``V > 0``, ``theta^2 <= sigma^2 q``);
        all five inputs are broadcast together to ``(A,)``.
    model : PhaseModel
        The model (:func:`~stumplib.phase.check_model`): ``omega, sigma, lam, A`` (``rho =
        sigma^2``; the branch is not used).
    warm : numpy.ndarray, shape ``(A, K, 2)``, optional
        Proximal solutions (e.g. the previous update's ``prox``) used as an extra start.
    options : UpdateOptions, optional
        The rule (``rule, n_nodes`` or explicit ``nodes, weights``) and the proximal solver's
        settings (default :class:`UpdateOptions`).

    Returns
    -------
    dict
        numpy arrays: ``q, m, V, theta``: the new overlaps, ``(A,)``; ``q_hat, m_hat, V_hat,
        theta_hat``: the conjugates, ``(A,)``; ``prox``: the proximal solutions, ``(A, K, 2)``; ``gnorm``: the largest
        proximal gradient norm (float; 0 with ``"bfgs"``); ``train_loss``: ``alpha E[ell(prox)] +
        lambda q / (2 sigma^2)``, ``(A,)``, and ``test_error``: ``(A,)`` or ``None`` without
        ``with_test_error``, both at the *input* overlaps.

    Raises
    ------
    ValueError
        For a ``model`` that is not a :class:`PhaseModel` or ``options`` not an
        :class:`UpdateOptions`.
    StateEvolutionError
        If the input overlaps violate ``theta^2 <= sigma^2 q`` or the update gives
        ``lambda + V_hat sigma^2 <= 0`` (the iteration left the admissible region).
    """
    model = as_model(model)
    if not isinstance(options, UpdateOptions):
        raise ValueError(f"options must be an UpdateOptions; got {type(options).__name__}")
    omega, sigma, lam, A_ = model.omega, model.sigma, model.lam, model.A
    n_nodes, rule, nodes, weights = options.n_nodes, options.rule, options.nodes, options.weights
    tol, restart, match_starts = options.tol, options.restart, options.match_starts
    with_test_error, minimiser = options.with_test_error, options.minimiser
    EIN = "ak,ak->a" if (weights is not None and np.ndim(weights) == 2) else "k,ak->a"
    alpha, q, m, V, theta = np.broadcast_arrays(*(np.atleast_1d(np.asarray(v, dtype=np.float64))
                                                  for v in (alpha, q, m, V, theta)))
    if nodes is None:
        nodes, w = quadrature_4d(rule, n_nodes)
    else:
        w = np.asarray(weights, dtype=np.float64)
    rho = sigma * sigma
    center, u, vstar, xi, Y = geometry(q, m, theta, sigma, nodes)
    t = teacher_rows(u, omega, A_)
    Vb = V[:, None]
    if minimiser == "bfgs":
        x = np.stack([proximal_bfgs(center[i], t[i], float(V[i]), sigma) for i in range(V.size)])
        gnorm = np.zeros(1)
    else:
        extra = [] if warm is None else [warm]
        x, G, gnorm = proximal(center, t, Vb, sigma, extra_starts=extra, tol=tol,
                               default_starts=restart or warm is None,
                               match_starts=match_starts and (restart or warm is None))
    r = x - center
    Vc = V
    m_hat = alpha * np.einsum(EIN, w, r[..., 0] - r[..., 1]) / Vc
    q_hat = alpha * np.einsum(EIN, w, r[..., 0] ** 2 + r[..., 1] ** 2) / Vc ** 2
    theta_hat = alpha * np.einsum(EIN, w, (r * Y).sum(-1)) / (Vc * vstar)
    V_hat = -alpha * np.einsum(EIN, w, (r * xi).sum(-1)) / (Vc * np.sqrt(q)) + theta * theta_hat / q
    den = lam + V_hat * rho
    if np.any(den <= 0):
        raise StateEvolutionError("lambda + V_hat sigma^2 <= 0: the iteration left the admissible region")
    q_new = rho * (q_hat * rho + m_hat ** 2 + theta_hat ** 2 * rho * rho) / den ** 2
    V_new = rho / den
    m_new = m_hat / den
    theta_new = rho * theta_hat * rho / den
    # losses at the input point
    s = expit(x * (x[..., 0] - x[..., 1])[..., None])
    ell_train = rho * ((s - t) ** 2).sum(-1)
    train_loss = alpha * np.einsum(EIN, w, ell_train) + lam * q / (2 * rho)
    return dict(q=q_new, m=m_new, V=V_new, theta=theta_new, q_hat=q_hat, m_hat=m_hat, V_hat=V_hat,
                theta_hat=theta_hat, prox=x, gnorm=float(gnorm.max()), train_loss=train_loss,
                test_error=(_test_error_nodes(q, m, theta, sigma, omega, A_, nodes, w)
                            if with_test_error else None))


def _test_error(q, m, theta, sigma, omega, A_, n_nodes, rule="gauss-hermite"):
    nodes, w = quadrature_4d(rule, n_nodes)
    return _test_error_nodes(q, m, theta, sigma, omega, A_, nodes, w)


def _test_error_nodes(q, m, theta, sigma, omega, A_, nodes, w):
    center, u, _, _, _ = geometry(q, m, theta, sigma, nodes)
    t = teacher_rows(u, omega, A_)
    s = expit(center * (center[..., 0] - center[..., 1])[..., None])
    ein = "ak,ak->a" if w.ndim == 2 else "k,ak->a"
    return sigma * sigma * np.einsum(ein, w, ((s - t) ** 2).sum(-1))


def test_error_from_overlaps(q: Any, m: Any, theta: Any, *, model: PhaseModel,
                             n_nodes: int = 12) -> np.ndarray:
    """Asymptotic per-sample test error ``E |y_hat - y|^2 / (2 d) = sigma^2 E sum_l (s_l - t_l)^2``.

    Student pre-activations ``h = sqrt(q) xi + (m, -m)``, teacher ``u = V* Y + theta xi / sqrt(q)``
    with ``V* = sqrt(sigma^2 - theta^2 / q)``; ``q, m, theta`` in the published normalisation.

    Parameters
    ----------
    q : float or array_like, shape ``(A,)``
        Student self-overlap ``sigma^2 |Q|^2 / d`` (finite, > 0).
    m : float or array_like, shape ``(A,)``
        Positional overlap ``p_1 . Q / sqrt(d)``.
    theta : float or array_like, shape ``(A,)``
        Semantic overlap ``sigma^2 Q* . Q / d``, with ``theta^2 <= sigma^2 q``; the three overlaps are
        broadcast together.
    model : PhaseModel
        The model (:func:`~stumplib.phase.check_model`): the teacher's positional share ``omega``
        and matrix ``A`` and the token noise ``sigma`` (``lam`` and the branch are not used).
    n_nodes : int, optional
        Gauss-Hermite nodes per axis of the 4-D tensor rule (2 to 60; default 12).

    Returns
    -------
    numpy.ndarray, shape ``(A,)``
        The test error at each overlap triple, a numpy array (the broadcast shape of the inputs, at
        least 1-D).

    Raises
    ------
    ValueError
        For bad arguments (named).
    """
    omega, sigma, _, A_, _ = as_model(model)
    q, m, theta = np.broadcast_arrays(*(np.atleast_1d(np.asarray(v, dtype=np.float64)) for v in (q, m, theta)))
    if np.any(q <= 0) or not np.all(np.isfinite(q)):
        raise ValueError("q must be finite and > 0")
    if np.any(theta ** 2 > sigma ** 2 * q * (1 + 1e-9)):
        raise ValueError("theta must satisfy theta^2 <= sigma^2 q")
    return _test_error(q, m, theta, sigma, omega, A_, check_int("n_nodes", n_nodes, minimum=2))


# ----------------------------------------------------------------------------------------------
# the solver
# ----------------------------------------------------------------------------------------------
def initial_point(alpha: np.ndarray, branch: str, sigma: float):
    """The damped iteration's default start on a branch.

    Parameters
    ----------
    alpha : (A,) sample ratios.
    branch : ``"semantic"`` or ``"positional"``.
    sigma : the tokens' noise scale.

    Returns
    -------
    (q, m, V, theta), each (A,).
    """
    rho = sigma * sigma
    a = np.minimum(alpha, 2.0)
    if branch == "semantic":
        q = rho * (0.05 + 0.4 * a / (1 + a))
        V = np.full_like(alpha, 15.0)
        theta = 0.6 * np.sqrt(rho * q)
        m = np.zeros_like(alpha)
    else:
        # near the published positional fixed point (q ~ 0.2 rho, m ~ 0.25); starting from a larger
        # q the iteration can end on another fixed point with m ~ 0.12 and a higher test error
        q = 0.2 * rho * np.minimum(1.0, a + 0.05)
        V = np.full_like(alpha, 12.0)
        theta = np.zeros_like(alpha)
        m = np.full_like(alpha, 0.25)
    return q, m, V, theta


@dataclass(eq=False)
class FixedRuleResult(MappingResult):
    """The fixed points of :func:`solve_fixed_rule`: (A,) arrays (scalars for a scalar ``alpha``),
    read as attributes or by key (``r.q`` or ``r["q"]``, ``r.keys()``, ``r.items()``, like a dict).

    ``q, m, V, theta``: the overlaps; ``q_hat, m_hat, V_hat, theta_hat``: their conjugates;
    ``train_loss`` (empirical risk divided by ``d``), ``test_error`` (per sample, = mse / 2 of the
    published files); ``n_iter`` (updates per ``alpha``), ``residual`` (last relative change),
    ``alpha``.
    """
    q: Any
    m: Any
    V: Any
    theta: Any
    q_hat: Any
    m_hat: Any
    V_hat: Any
    theta_hat: Any
    train_loss: Any
    test_error: Any
    n_iter: Any
    residual: Any
    alpha: Any


#: the outputs of one update that :func:`solve_fixed_rule` keeps besides the overlaps
_FIXED_RULE_KEYS = ("q_hat", "m_hat", "V_hat", "theta_hat", "train_loss", "test_error")
#: scales of q, m, V, theta below which changes are absolute (damped iteration)
_FIXED_RULE_FLOOR = np.array([1e-4, 1e-2, 1e-2, 1e-4])


@dataclass(eq=False)
class _DampedIteration:
    """State of the damped fixed-point iteration of :func:`solve_fixed_rule`, one entry per
    ``alpha``: the overlaps, the damping ``eta`` (raised where an update does not shrink the change),
    the last change ``prev``, ``pending`` (the change was small at a followed-only update: the next is
    a full multi-start), ``active`` (not converged), the proximal minimisers ``warm``."""
    alphas: np.ndarray
    model: PhaseModel
    symmetric: bool
    q: np.ndarray
    m: np.ndarray
    V: np.ndarray
    theta: np.ndarray
    eta: np.ndarray
    prev: np.ndarray
    pending: np.ndarray
    active: np.ndarray
    n_iter: np.ndarray
    resid: np.ndarray
    final: dict
    warm: np.ndarray | None = None

    @classmethod
    def start(cls, alphas: np.ndarray, model: PhaseModel, init: dict[str, Any] | None,
              damping: float) -> "_DampedIteration":
        """The branch's default start (or ``init``), ``m = 0`` imposed on a swap-symmetric semantic
        branch (the update is odd in ``m``: rounding noise cannot push the iteration off it)."""
        q, m, V, theta = initial_point(alphas, model.branch, model.sigma)
        if init is not None:
            q, m, V, theta = (np.broadcast_to(np.asarray(init[k], dtype=np.float64), alphas.shape).copy()
                              for k in ("q", "m", "V", "theta"))
        nA = alphas.size
        symmetric = model.branch == "semantic" and np.allclose(model.A, model.A[::-1, ::-1])
        if symmetric:
            m = np.zeros_like(m)
        return cls(alphas=alphas, model=model, symmetric=symmetric, q=q, m=m, V=V, theta=theta,
                   eta=np.full(nA, damping), prev=np.full(nA, np.inf), pending=np.zeros(nA, dtype=bool),
                   active=np.ones(nA, dtype=bool), n_iter=np.zeros(nA, dtype=int),
                   resid=np.full(nA, np.inf), final={k: np.zeros(nA) for k in _FIXED_RULE_KEYS})

    def update(self, it: int, *, rule: str, n_nodes: int, tol: float, restart_every: int = 5) -> bool:
        """One damped update of the active entries (a full multi-start search every
        ``restart_every`` updates and before convergence is declared); True when none is left."""
        idx = np.flatnonzero(self.active)
        restart = it % restart_every == 0 or bool(self.pending[idx].any())
        branch = self.model.branch
        up = se_update(self.alphas[idx], self.q[idx], self.m[idx], self.V[idx], self.theta[idx],
                       model=self.model, warm=None if self.warm is None else self.warm[idx],
                       options=UpdateOptions(n_nodes=n_nodes, restart=restart, rule=rule))
        if self.symmetric:
            up["m"] = np.zeros_like(up["m"])
        if branch == "positional":
            up["theta"] = np.zeros_like(up["theta"])
        if self.warm is None:
            self.warm = np.zeros((self.alphas.size,) + up["prox"].shape[1:])
        self.warm[idx] = up["prox"]
        old = np.stack([self.q[idx], self.m[idx], self.V[idx], self.theta[idx]], -1)
        new = np.stack([up["q"], up["m"], up["V"], up["theta"]], -1)
        if not np.all(np.isfinite(new)):
            raise StateEvolutionError(f"state evolution produced non-finite overlaps at alpha="
                                      f"{self.alphas[idx][~np.all(np.isfinite(new), -1)].tolist()}")
        rel = np.max(np.abs(new - old) / np.maximum(np.abs(old), _FIXED_RULE_FLOOR), axis=-1)
        self.resid[idx] = rel
        self.n_iter[idx] += 1
        for k in _FIXED_RULE_KEYS:
            self.final[k][idx] = up[k]
        small = rel < tol
        done = small & restart  # convergence is only declared after a full multi-start update
        self.pending[idx] = small & ~restart
        # adaptive damping: an update that does not shrink the change is an oscillation; damp more
        eta = self.eta
        grow = rel >= self.prev[idx]
        eta[idx] = np.where(grow, np.minimum(0.97, 1 - 0.7 * (1 - eta[idx])), eta[idx])
        self.prev[idx] = rel
        upd = eta[idx, None] * old + (1 - eta[idx, None]) * new
        upd[done] = old[done]  # a converged point keeps the point at which it was checked
        self.q[idx], self.m[idx], self.V[idx], self.theta[idx] = upd.T
        self.active[idx[done]] = False
        return not self.active.any()

    def result(self) -> FixedRuleResult:
        return FixedRuleResult(q=self.q, m=self.m, V=self.V, theta=self.theta, **self.final, n_iter=self.n_iter,
                               residual=self.resid, alpha=self.alphas)


def solve_fixed_rule(alpha: Any, *, model: PhaseModel, n_nodes: int = 10,
                     rule: str = "gauss-hermite", damping: float = 0.5, tol: float = 1e-5,
                     max_iter: int = 600, init: dict[str, Any] | None = None) -> FixedRuleResult:
    """Solve the state evolution on a batch of sample ratios ``alpha = n / d``.

    Damped fixed-point iteration ``z <- damping z + (1 - damping) F(z)`` on ``z = (q, m, V, theta)``
    for all ``alpha`` at once (converged points are frozen), from an initial point on the requested
    branch (semantic: ``theta > 0, m = 0``; positional: ``m > 0, theta = 0``). The proximal problems
    start from the previous iterate's solution, and every 5th update (and before convergence is
    declared) also from the centre and the origin, keeping the best. On the semantic branch with a
    swap-symmetric ``A`` (``A[::-1, ::-1] == A``, as the paper's), ``m = 0`` is imposed; on the
    positional branch ``theta = 0`` is imposed (the teacher is even in ``u``, so ``theta = 0`` is an
    invariant subspace of the exact update; without the constraint, ties between the proximal
    problem's symmetric minima let rounding push the iteration off the branch).

    Parameters
    ----------
    alpha : positive number or 1-D sequence of positive numbers.
    model : :class:`PhaseModel` (:func:`~stumplib.phase.check_model`): ``omega, sigma, lam, A``
        (``rho = sigma^2``) and the branch, ``"semantic"`` or ``"positional"``.
    n_nodes : Gauss-Hermite nodes per axis (4-D tensor rule, tiny weights pruned, 4 to 30); with
        ``rule="sobol"``, the base-2 logarithm of the number of quasi-Monte Carlo points (8 to 20).
    rule : ``"gauss-hermite"`` (default) or ``"sobol"`` (see :func:`quadrature_4d`).
    damping : initial weight of the old iterate, in [0, 1); raised per ``alpha`` (up to 0.97)
        whenever an update does not shrink the change (oscillation).
    tol : convergence when every overlap changes by less than ``tol`` relative in one update
        (``|dz| <= tol max(|z|, floor)`` componentwise, floors 1e-4, 1e-2, 1e-2, 1e-4 for
        ``q, m, V, theta``: ``m`` is zero up to rounding on the semantic branch).
    max_iter : iteration cap; :class:`StateEvolutionError` if reached.
    init : optional dict of (A,) initial ``q, m, V, theta`` (overrides the branch's default).

    Returns
    -------
    FixedRuleResult
        (A,) numpy arrays (scalars for scalar ``alpha``), read by attribute or key like a dict:
        ``q, m, V, theta``, the conjugates, ``test_error`` (per sample, = mse / 2 of the published files),
        ``train_loss`` (empirical risk divided by ``d``: ``alpha E[ell(prox)] + lambda q / (2
        sigma^2)``; lower is the global minimum), ``n_iter`` and ``residual`` (last relative change),
        ``alpha``.

    Raises
    ------
    ValueError
        For bad arguments (named).
    StateEvolutionError
        If the iteration does not converge within ``max_iter`` updates.
    """
    alphas, scalar = check_alphas(alpha)
    model = as_model(model)
    rule = check_choice("rule", rule, RULES)
    n_nodes = check_n_nodes(rule, n_nodes)
    damping = check_real("damping", damping, low=0.0, high=1.0, high_open=True)
    tol = check_real("tol", tol, low=0.0, low_open=True, high=1e-2)
    max_iter = check_int("max_iter", max_iter, minimum=1)

    state = _DampedIteration.start(alphas, model, init, damping)
    for it in range(max_iter):
        if state.update(it, rule=rule, n_nodes=n_nodes, tol=tol):
            break
    else:
        bad = alphas[state.active]
        raise StateEvolutionError(
            f"state evolution ({model.branch} branch, omega={model.omega}) did not converge within max_iter="
            f"{max_iter} iterations for alpha={bad.tolist()} (last relative change "
            f"{state.resid[state.active].max():.2e} > tol={tol}); try more iterations or more damping")
    out = state.result()
    return out.first() if scalar else out


# ----------------------------------------------------------------------------------------------
# the semantic branch along theta: a one-dimensional view of the fixed-point problem
# ----------------------------------------------------------------------------------------------
def theta_profile(alpha: float, thetas: Any, *, omega: float, sigma: float = 0.5, lam: float = 0.01,
                  A: Any = DEFAULT_A, rule: str = "gauss-hermite", n_nodes: int = 10,
                  tol: float = 1e-4, max_iter: int = 300) -> dict[str, np.ndarray]:
    """The semantic branch's fixed-point problem restricted to a line in ``theta``.

    For each ``theta`` of the grid, ``m = 0`` (swap-symmetric ``A``) and ``theta`` are held fixed
    and ``q, V`` are iterated to their fixed point (damping from 0.5, raised where an update
    oscillates; these two directions are well conditioned); then one more update gives the ``theta`` the equations return, ``F(theta)``. The
    state evolution's semantic fixed points are the roots of the residual
    ``g(theta) = F(theta) - theta``. Where ``g`` stays small over a wide range of ``theta`` the
    fixed point is ill-conditioned: a small error in the Gaussian averages moves the root far.

    Parameters
    ----------
    alpha : float
        Sample ratio ``n / d`` (> 0, at most 1000; a single number).
    thetas : array_like, shape ``(T,)``
        Grid of semantic overlaps (published normalisation), each in ``(0, sigma^2)``; all solved at
        once.
    omega : float
        Positional share of the teacher, in [0, 1].
    sigma : float, optional
        Standard deviation of the token noise entries, in (0, 100] (default 0.5).
    lam : float, optional
        Ridge penalty ``lambda``, in (0, 1000] (default 0.01).
    A : array_like, shape ``(2, 2)``, optional
        Row-stochastic positional matrix of the teacher; must be swap-symmetric (default the
        paper's).
    rule : str, optional
        Quadrature, see :func:`quadrature_4d` (default ``"gauss-hermite"``).
    n_nodes : int, optional
        Its size: Gauss-Hermite nodes per axis (4 to 30; default 10) or, for ``"sobol"``, the base-2
        logarithm of the number of points (8 to 20).
    tol : float, optional
        Inner convergence: the damped step of ``q`` and ``V``, relative, below ``tol`` for every
        ``theta`` (in (0, 0.01]; default 1e-4).
    max_iter : int, optional
        Cap on the inner updates (>= 1; default 300).

    Returns
    -------
    dict
        ``(T,)`` arrays ``theta, F_theta, residual, q, V, test_error, train_loss`` (train loss from
        the last update's proximal solutions, test error at ``(q, 0, theta)``) and the float ``root``:
        the first sign change of ``residual`` from positive to negative along the grid, linearly
        interpolated (NaN if there is none: then no stable semantic fixed point lies inside the
        grid; NaN also for a single ``theta``).

    Raises
    ------
    ValueError
        For bad arguments.
    StateEvolutionError
        If the inner iteration does not converge within ``max_iter`` updates.
    """
    alphas, scalar = check_alphas(alpha)
    if not scalar:
        raise ValueError("alpha must be a single number for theta_profile")
    model = check_model(omega=omega, sigma=sigma, lam=lam, A=A)
    omega, sigma, lam, A_, _ = model
    if not np.allclose(A_, A_[::-1, ::-1]):
        raise ValueError("theta_profile needs a swap-symmetric A (A[::-1, ::-1] == A), so that m = 0")
    rule = check_choice("rule", rule, RULES)
    n_nodes = check_n_nodes(rule, n_nodes)
    rho = sigma * sigma
    th = np.asarray(check_grid("thetas", list(np.atleast_1d(np.asarray(thetas, dtype=np.float64))),
                               kind="real", minimum=0.0, maximum=rho), dtype=np.float64)
    if np.any(th <= 0) or np.any(th >= rho):
        raise ValueError(f"thetas must lie in (0, sigma^2) = (0, {rho})")
    tol = check_real("tol", tol, low=0.0, low_open=True, high=1e-2)
    max_iter = check_int("max_iter", max_iter, minimum=1)
    a = np.full(th.shape, alphas[0])
    # start from q with theta^2 / q well inside rho (V* > 0), V as on the branch's default start
    q0, _, V0, _ = initial_point(alphas, "semantic", sigma)
    q = np.maximum(np.full(th.shape, q0[0]), 1.5 * th ** 2 / rho)
    V = np.full(th.shape, V0[0])
    zeros = np.zeros_like(th)
    kw = dict(model=model, options=UpdateOptions(n_nodes=n_nodes, rule=rule))
    eta = np.full(th.shape, 0.5)  # damping, raised per theta when an update does not shrink the change
    prev = np.full(th.shape, np.inf)
    for _ in range(max_iter):
        up = se_update(a, q, zeros, V, th, **kw)
        qn = np.maximum(up["q"], 1.05 * th ** 2 / rho)  # stay in the admissible region
        rel = np.maximum(np.abs(qn / q - 1), np.abs(up["V"] / V - 1))
        # the change of the damped iterate: with a finite rule the update can jump (a node's
        # proximal minimiser switching branch), leaving a small undamped cycle around the fixed point
        ch = float(((1 - eta) * rel).max())
        if ch < tol:
            break
        eta = np.where(rel >= prev, np.minimum(0.97, 1 - 0.7 * (1 - eta)), eta)
        prev = rel
        q, V = eta * q + (1 - eta) * qn, eta * V + (1 - eta) * up["V"]
    else:
        raise StateEvolutionError(f"theta_profile: q, V did not converge within max_iter={max_iter} "
                                  f"updates at alpha={alphas[0]} (last relative change {ch:.2e})")
    up = se_update(a, q, zeros, V, th, **kw)
    g = up["theta"] - th
    from stumplib.core.stats import crossing
    root = crossing(th, g, 0.0, direction="down", which="first") if th.size >= 2 else float("nan")
    return dict(theta=th, F_theta=up["theta"], residual=g, q=q, V=V, test_error=up["test_error"],
                train_loss=up["train_loss"], root=root)
