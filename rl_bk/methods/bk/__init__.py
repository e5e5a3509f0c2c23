"""BK (Background Knowledge for RL; mansicer/background-knowledge-rl): PPO shaped by a potential
learned offline from an LLM's knowledge, in three forms, BK-Code (:mod:`.code`), BK-Pref
(:mod:`.preference`) and BK-Goal (:mod:`.goals`), sharing the shaping term (:mod:`.config`,
:mod:`.potential_shaping`), the potential sources (:mod:`.sources`) and BK's settings
(:mod:`.settings`): docs/methods.md#bk-bk-code-bk-pref-bk-goal. The names load lazily, so that
the builders and settings import without the RLlib classes.
"""

from __future__ import annotations

from rl_bk.algorithms.lazy_names import lazy_names

_WHERE = {
    "LazySource": "sources",
    "PotentialShaping": "potential_shaping",
    "PotentialSource": "potential",
    "ShapedAPPOConfig": "config",
    "ShapedPPOConfig": "config",
    "SourceSpec": "sources",
}
__all__ = sorted(_WHERE)
__getattr__ = lazy_names(__name__, _WHERE)
