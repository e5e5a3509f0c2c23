"""PTGM ("Pre-Training Goal-based Models", PKU-RL/PTGM) pre-training on captioned datasets:
a goal codebook of real states, a goal-conditioned low-level policy trained with hindsight
goals, and a goal prior; :class:`PTGMModels` is what high-level RL loads."""

from rl_bk.methods.ptgm.pretraining.build import build_ptgm
from rl_bk.methods.ptgm.pretraining.codebook import Codebook, assign, build_codebook
from rl_bk.methods.ptgm.pretraining.embeddings import state_embeddings
from rl_bk.methods.ptgm.pretraining.low_level import (
    GoalConditionedPolicy,
    hindsight_examples,
    split_by_episode,
    train_low_level,
)
from rl_bk.methods.ptgm.pretraining.models import PTGMModels
from rl_bk.methods.ptgm.pretraining.prior import GoalPrior, prior_examples, train_prior

__all__ = [
    "Codebook",
    "GoalConditionedPolicy",
    "GoalPrior",
    "PTGMModels",
    "assign",
    "build_codebook",
    "build_ptgm",
    "hindsight_examples",
    "prior_examples",
    "split_by_episode",
    "state_embeddings",
    "train_low_level",
    "train_prior",
]
