from rl_bk.algorithms.shaped_ppo.config import ShapedPPOConfig

__all__ = ["ShapedPPOConfig"]
