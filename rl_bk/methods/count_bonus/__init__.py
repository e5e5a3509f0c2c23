"""Count-bonus PPO: PPO plus a count-based exploration bonus over the step captions,
``coeff / sqrt(N(caption))``, N counted over the whole run in the learner.

Everything that is the method's lives here: :mod:`.settings` (the ``count_bonus:`` section),
:mod:`.intrinsic_reward` (the counts and the bonus) and :mod:`.config`. The names load lazily,
so that the settings import without the RLlib classes.
"""

from __future__ import annotations

from rl_bk.algorithms.lazy_names import lazy_names

_WHERE = {
    "CaptionCountBonus": "intrinsic_reward",
    "CountBonusPPOConfig": "config",
}
__all__ = sorted(_WHERE)
__getattr__ = lazy_names(__name__, _WHERE)
