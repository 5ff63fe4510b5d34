"""The solvable dot-product attention model of Cui et al. (arXiv:2402.03902): positional versus
semantic learning (chapter 6).

The public names (``from stumplib.phase import ...``); arrays in and out are numpy, except the
minimisers' problem and students (``Q``, the data), which are torch tensors. The functions take the
model as one object, ``model=check_model(omega=..., sigma=..., lam=..., A=...)`` (checked once,
where it is built), and their solver settings as one frozen options object:

- the model: :class:`PhaseModel` (``omega, sigma, lam, A, branch``, built and checked by
  :func:`check_model`), :data:`DEFAULT_A`;
- data: :func:`positional_encodings`, :func:`sample_teacher`, :func:`sample_tokens`;
- the state evolution (replica-symmetric fixed point, ``d -> inf``): :func:`state_evolution`
  (its accuracy control :class:`SolverOptions`; :class:`StateEvolutionResult`, :class:`Outcome`,
  :class:`AccuracyNotReached`), one update :func:`se_update` (:class:`UpdateOptions`),
  :func:`test_error_from_overlaps`, the fixed-rule solver :func:`solve_fixed_rule`;
  :class:`StateEvolutionError`;
- the finite-``d`` empirical risk minimisers: :func:`make_problem` (:class:`Problem`),
  :func:`minimiser_runs` (:class:`MinimiserOptions`), their :func:`exact_test_error`;
- the paper's plain gradient descent: :func:`train_attention_gd` (:class:`AttentionGDOptions`),
  :func:`attention_test_error`;
- the linear positional baseline: :func:`linear_baseline_test_error`.

The module list below is the package's inside; names not listed above are not part of the public
API. The chapter's studies of this model (the phase diagram, the curves of both branches, the
replay of the published curves, the decision between theories, the flat window's overlaps, held-theta
landscapes, lowest minima and scaling forms) live with the book, in :mod:`stumplib.book.studies`.

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
  four-dimensional Gauss-Hermite integral); :mod:`.dynamics_check`: the stability flag along ``m``
  checked by minimisation.
- Near ``alpha = 1``: :mod:`.landscape_fit` (minimum and curvature of a loss curve),
  :mod:`.replicon` (the replica-symmetric point's stability).
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
"""
from stumplib.phase.attention import AttentionGDOptions, attention_test_error, train_attention_gd
from stumplib.phase.data import positional_encodings, sample_teacher, sample_tokens
from stumplib.phase.exact_error import exact_test_error
from stumplib.phase.minimise import MinimiserOptions, minimiser_runs
from stumplib.phase.positional_baseline import linear_baseline_test_error
from stumplib.phase.problem import Problem, make_problem
from stumplib.phase.replica import (UpdateOptions, se_update, solve_fixed_rule,
                                    test_error_from_overlaps)
from stumplib.phase.setting import DEFAULT_A, PhaseModel, StateEvolutionError, check_model
from stumplib.phase.solver import (AccuracyNotReached, Outcome, SolverOptions,
                                   StateEvolutionResult, state_evolution)

__all__ = ["PhaseModel", "check_model", "DEFAULT_A", "positional_encodings", "sample_teacher",
           "sample_tokens", "state_evolution", "SolverOptions", "StateEvolutionResult", "Outcome",
           "AccuracyNotReached", "StateEvolutionError", "se_update", "UpdateOptions",
           "test_error_from_overlaps", "solve_fixed_rule", "make_problem", "Problem",
           "minimiser_runs", "MinimiserOptions", "exact_test_error", "train_attention_gd",
           "AttentionGDOptions", "attention_test_error", "linear_baseline_test_error"]
