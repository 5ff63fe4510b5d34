"""The decision-stump model of Le et al. (arXiv:2610.07074): one softmax-attention head that learns a
threshold in context (chapters 1 to 5).

A task draws a threshold ``tau`` from the prior ``U[tau_lo, tau_hi]`` and a context of ``N`` points
``x`` with labels ``y = 1{x >= tau}``; the head reads the context and estimates ``tau`` with its two
parameters ``(beta, b)``. Arrays at this surface are numpy, except the model's own inputs and
outputs (contexts, estimates), which are torch tensors like the trainers that use them. Every
function that draws or averages thresholds takes the prior as one object, ``prior=Prior(lo, hi)``
(checked once, where it is built), and the solvers and trainers take their settings as one frozen
options object (:class:`FlowOptions`, :class:`TrainOptions`).

The public names (``from stumplib.stump import ...``):

- the prior: :class:`Prior` (frozen, checked once), :data:`DEFAULT_PRIOR`;
- tasks: :func:`sample_tasks`, :func:`sample_thresholds`, :func:`sample_contexts`;
- the model: :func:`estimate`, :func:`attention_weights`, :func:`estimate_and_grad`;
- its population limit (exact, ``N -> inf``): :func:`population_estimate`,
  :func:`population_error`, :func:`population_loss`;
- the population dynamics: :func:`integrate_flow` (gradient flow, :class:`FlowResult`, the
  solver's :class:`FlowOptions`), :func:`population_gd` (gradient descent);
- training on a finite corpus of ``m`` tasks of ``n`` points: :class:`RunConfig`,
  :func:`make_corpora`, :func:`train_gd` (:class:`TrainResult`), and the two-head model's
  :func:`train_two_head`; the trainers' records and divergence checks: :class:`TrainOptions`;
- reference estimators: :func:`erm_stump`, :func:`bayes_posterior_mean`.

Everything else in the package's modules is an implementation detail (``exponents`` and
``landscape`` measure the population flow; ``boundary`` and ``two_head`` hold the boundary-aware,
reflected and two-head estimators), importable by its module path, not part of the public API. The
chapters' studies of this model (``calibration``, ``certified``, ``transfer``, ``staged``,
``frozen``: the protocols and grids behind chapters 3 and 4) live with the book, in
:mod:`stumplib.book.studies`.
"""
from stumplib.stump.baselines import bayes_posterior_mean, erm_stump
from stumplib.stump.flow import FlowOptions, FlowResult, integrate_flow, population_gd
from stumplib.stump.model import attention_weights, estimate, estimate_and_grad
from stumplib.stump.population import population_error, population_estimate, population_loss
from stumplib.stump.prior import DEFAULT_PRIOR, Prior
from stumplib.stump.tasks import sample_contexts, sample_tasks, sample_thresholds
from stumplib.stump.trainer import RunConfig, TrainOptions, TrainResult, make_corpora, train_gd
from stumplib.stump.two_head import train_two_head

__all__ = ["Prior", "DEFAULT_PRIOR", "sample_tasks", "sample_thresholds", "sample_contexts",
           "estimate", "attention_weights", "estimate_and_grad", "population_estimate",
           "population_error", "population_loss", "integrate_flow", "FlowResult", "FlowOptions",
           "population_gd", "RunConfig", "TrainOptions", "make_corpora", "train_gd", "TrainResult",
           "train_two_head", "erm_stump", "bayes_posterior_mean"]
