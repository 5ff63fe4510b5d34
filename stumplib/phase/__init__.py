"""The solvable dot-product attention model of Cui et al. (arXiv:2402.03902): positional versus
semantic learning.

- :mod:`.data`: positional encodings, teacher, samples.
- :mod:`.attention`: the tied rank-one attention student, full-batch gradient descent over many runs
  at once, summary statistics and test error; the linear positional baseline fitted on samples.
- :mod:`.se`: the state-evolution equations, quadrature rules (Gauss-Hermite, scrambled Sobol, the
  authors' 144-node Stroud-Secrest product rule), the proximal step, one update, and a fixed-rule
  damped solver (:func:`.se.solve_fixed_rule`, also used to replay the authors' procedure).
- :mod:`.solver`: :func:`state_evolution`, the accuracy-controlled solver (randomised QMC with an
  error estimate, named outcomes, stability of the imposed symmetry).
- :mod:`.baseline`: the linear positional baseline's exact test error.
- :mod:`.transition`: transition points (alpha_c, alpha_l) from the two branches on a grid.
"""
from .se import StateEvolutionError  # noqa: F401
from .solver import AccuracyNotReached, Outcome, state_evolution  # noqa: F401
