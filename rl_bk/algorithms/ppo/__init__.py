"""The PPO every rl-bk method builds on: RLlib's PPO, plus the loss options and the network
that the papers' own code used, so that a method can run "PPO as its paper's code ran it":
:mod:`.config` (:class:`BasePPOConfig` and its options), :mod:`.learner` (the loss they
select), :mod:`.grid_conv_module` (BK's conv network). Details:
docs/methods.md#bk-bk-code-bk-pref-bk-goal. The names load lazily, so that the settings import
without the RLlib classes.
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
