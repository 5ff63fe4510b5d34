"""The solvable dot-product attention model of Cui et al. (arXiv:2402.03902): positional versus
semantic learning.

- :mod:`.data`: positional encodings, teacher, samples.
- :mod:`.attention`: the tied rank-one attention student, full-batch gradient descent over many runs
  at once, summary statistics and test error; the linear positional baseline fitted on samples.
- :mod:`.state_evolution`: the asymptotic theory (state evolution), batched over ``alpha``.
- :mod:`.baseline`: the linear positional baseline's exact test error.
- :mod:`.transition`: transition points (alpha_c, alpha_l) from the two branches on a grid.
"""
from .state_evolution import StateEvolutionError  # noqa: F401  (the function is stumplib.phase.state_evolution.state_evolution)
