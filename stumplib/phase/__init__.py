"""The solvable dot-product attention model of Cui et al. (arXiv:2402.03902): positional versus
semantic learning.

- :mod:`.data`: positional encodings, teacher (the one teacher formula,
  :func:`.data.teacher_of_scores`), samples.
- :mod:`.attention`: the tied rank-one attention student's objective and gradient, its Monte Carlo
  test error, and the paper's plain full-batch gradient descent over many runs at once.
- :mod:`.minimise`: converged minimisers (L-BFGS with a Newton-CG finish, relative gradient 1e-8),
  their exact test error (a four-dimensional Gauss-Hermite integral), and the decision between two
  theories from minimisers extrapolated in ``1/d``.
- :mod:`.se`: the state-evolution equations, quadrature rules (Gauss-Hermite, scrambled Sobol, the
  authors' 144-node Stroud-Secrest product rule), the proximal step, one update, and a fixed-rule
  damped solver (:func:`.se.solve_fixed_rule`, also used to replay the authors' procedure).
- :mod:`.solver`: :func:`state_evolution`, the accuracy-controlled solver (randomised QMC with an
  error estimate, named outcomes, stability of the imposed symmetry).
- :mod:`.baseline`: the linear positional baseline's exact test error.
- :mod:`.transition`: crossings with intervals, the published curves and their replay, the
  chapter's verdicts.
- :mod:`.diagram`: the phase diagram, alpha_c(omega) and alpha_l(omega) located by bracketing.
"""
from stumplib.phase.se import StateEvolutionError# noqa: F401
from stumplib.phase.solver import AccuracyNotReached, Outcome, state_evolution# noqa: F401
