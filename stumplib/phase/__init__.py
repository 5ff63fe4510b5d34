"""The solvable dot-product attention model of Cui et al. (arXiv:2402.03902): positional versus
semantic learning.

- :mod:`.setting`: the model's parameters (``omega, sigma, lambda, A``, the branch), their checks, the
  teacher's attention rows, and :class:`StateEvolutionError`.
- :mod:`.data`: positional encodings, teacher (the one teacher formula,
  :func:`.data.teacher_of_scores`), samples.
- :mod:`.objective`: the student's regularised empirical risk and its analytic gradient (the one
  objective kernel) and the names of the starting points.
- :mod:`.attention`: the student's Monte Carlo test error and the paper's plain full-batch gradient
  descent over many runs at once.
- :mod:`.problem`: the minimisation problem of many seeds (data, Gram matrices), its starts and
  the overlaps of a student; :mod:`.minimise`: converged minimisers (L-BFGS with a Newton-CG
  finish, relative gradient 1e-8) and plain GD; :mod:`.exact_error`: their exact test error (a
  four-dimensional Gauss-Hermite integral); :mod:`.decision`: the decision between two theories
  from minimisers extrapolated in ``1/d``; :mod:`.dynamics_check`: the stability flag along ``m``
  checked by minimisation.
- The flat window near ``alpha = 1``: :mod:`.overlaps` (the minimisers' overlaps per ``(alpha,
  d)`` and the theory's), :mod:`.held_theta` (the minimiser with theta held: the landscape at
  finite ``d``), :mod:`.held_theory` (the state evolution with theta held), :mod:`.landscape_fit`
  (minimum and curvature of a loss curve), :mod:`.scaling_forms` (the approach in ``d``, chosen
  by AICc), :mod:`.replicon` (the replica-symmetric point's stability).
- :mod:`.quadrature`: four-dimensional Gaussian quadrature rules (Gauss-Hermite, scrambled Sobol,
  the authors' 144-node Stroud-Secrest product rule); :mod:`.parallel`: the thread pool.
- :mod:`.proximal`: the two-dimensional proximal step behind the conjugate updates.
- :mod:`.replica`: the replica-symmetric fixed-point (state-evolution) equations: one update, the
  test error from overlaps, a fixed-rule damped solver (:func:`.replica.solve_fixed_rule`, also used
  to replay the authors' procedure) and the one-dimensional view along theta.
- :mod:`.solver`: :func:`state_evolution`, the accuracy-controlled solver (randomised QMC with an
  error estimate, named outcomes, stability of the imposed symmetry), built from
  :mod:`.solver_qmc` (the scrambled Sobol rules, pooled, and the update on them),
  :mod:`.solver_fixed_point` (the pooled rule's fixed point by a quasi-Newton method, the
  continuation predictor) and :mod:`.solver_search` (one alpha's search over numbers of points:
  the delta-method error and the outcome).
- :mod:`.positional_baseline`: the linear positional baseline's exact test error.
- :mod:`.crossings`: crossings with intervals, where a branch ends.
- :mod:`.curves`: the accurate and fixed-rule curves of both branches, the semantic branch's tail,
  the view along theta.
- :mod:`.published`: the published curves and the replay of the authors' procedure.
- :mod:`.diagram`: the phase diagram, alpha_c(omega) and alpha_l(omega) located by bracketing.
"""
from stumplib.phase.setting import StateEvolutionError  # noqa: F401
from stumplib.phase.solver import AccuracyNotReached, Outcome, state_evolution  # noqa: F401
