"""RND-PPO: PPO with Random Network Distillation (Burda et al. 2018), on RLlib's new API stack.

    from rl_bk.methods.rnd import RNDPPOConfig
    config = (RNDPPOConfig().environment("BabyAI-Text-GoToLocal-RedBall-S20-v0")
              .training(int_coeff=1.0, ext_coeff=2.0)
              .rl_module(model_config=DefaultModelConfig(fcnet_hiddens=[256, 256])))

The names are loaded lazily, so that ``rl_bk.methods.rnd.advantages`` (RND's numbers on
numpy arrays) imports without the algorithm classes.
"""

from __future__ import annotations

from rl_bk.algorithms.lazy_names import lazy_names

_WHERE = {"RNDPPO": "config", "RNDPPOConfig": "config"}
__all__ = sorted(_WHERE)
__getattr__ = lazy_names(__name__, _WHERE)
