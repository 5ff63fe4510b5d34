"""The exceptions shared by both paper packages (one home, so that no paper module imports another
paper's module for an exception)."""
from __future__ import annotations


class TrainingDiverged(RuntimeError):
    """A training run diverged: a non-finite loss or parameter, a parameter past its bound, or the
    loss far above its initial value. Raised by the stump trainers (:func:`stumplib.stump.trainer.train_gd`,
    :func:`stumplib.stump.flow.population_gd`) and by the attention trainer
    (:func:`stumplib.phase.attention.train_attention_gd`); the message names the run and the step."""
