"""The PPO every rl-bk method builds on: RLlib's PPO, plus the loss options and the network
that the papers' own code used, so that a method can run "PPO as its paper's code ran it".

- :mod:`.config`: :class:`BasePPOConfig`, RLlib's ``PPOConfig`` with four more typed
  ``training(...)`` parameters: ``value_loss`` (RLlib's, or CleanRL's value clip, as BK's
  ``train_rs.py``), ``advantage_normalization`` (per train batch, or per minibatch as
  CleanRL), ``adam_epsilon`` and ``bootstrap_time_limits`` (RLlib bootstraps where a time
  limit cut an episode; CleanRL and BK end it there);
- :mod:`.learner`: :class:`BasePPOTorchLearner`, the loss and the learner pieces those
  options select;
- :mod:`.grid_conv_module`: :class:`GridConvPPOModule`, BK's conv network over BabyAI's
  7x7x3 view (one shared torso, a policy head, extrinsic and intrinsic value heads).

The names load lazily, so that the settings import without the RLlib classes.
"""

from __future__ import annotations

from rl_bk.algorithms.lazy_names import lazy_names

_WHERE = {
    "BasePPOConfig": "config",
    "BasePPOTorchLearner": "learner",
    "GridConvAPPOModule": "grid_conv_module",
    "GridConvPPOModule": "grid_conv_module",
    "KeepValuePredictions": "learner",
}
__all__ = sorted(_WHERE)
__getattr__ = lazy_names(__name__, _WHERE)
