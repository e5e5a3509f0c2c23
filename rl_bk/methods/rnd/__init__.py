"""RND-PPO: PPO with Random Network Distillation (Burda et al. 2018), on RLlib's new API stack
(:class:`RNDPPOConfig`). The names are loaded lazily, so that ``rl_bk.methods.rnd.advantages``
(RND's numbers on numpy arrays) imports without the algorithm classes. Details:
docs/methods.md#rnd-ppos-pieces.
"""

from __future__ import annotations

from rl_bk.algorithms.lazy_names import lazy_names

_WHERE = {"RNDPPO": "config", "RNDPPOConfig": "config"}
__all__ = sorted(_WHERE)
__getattr__ = lazy_names(__name__, _WHERE)
