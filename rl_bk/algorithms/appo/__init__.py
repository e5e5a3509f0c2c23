"""The APPO every rl-bk method's ``algorithm: appo`` form builds on: RLlib's APPO, with a
learner thread that waits for batches instead of polling for them, and a target policy that
skips the old critic network (:mod:`.config`: :class:`BaseAPPOConfig`; :mod:`.learner`:
:class:`BaseAPPOTorchLearner` and the :class:`WaitingCircularBuffer` its learner thread reads;
:mod:`.rl_module`: :class:`ActorTargetAPPOTorchRLModule`). The names load lazily, so that the
settings import without the RLlib classes.
"""

from __future__ import annotations

from rl_bk.algorithms.lazy_names import lazy_names

_WHERE = {
    "ActorTargetAPPOTorchRLModule": "rl_module",
    "BaseAPPOConfig": "config",
    "BaseAPPOTorchLearner": "learner",
    "WaitingCircularBuffer": "learner",
    "WaitingLearnerQueue": "learner",
}
__all__ = sorted(_WHERE)
__getattr__ = lazy_names(__name__, _WHERE)
