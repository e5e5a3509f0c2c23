"""BK (Background Knowledge for RL): PPO shaped by a potential learned offline from an LLM's
knowledge, in three forms (BK-Code, BK-Pref, BK-Goal; mansicer/background-knowledge-rl).

- :mod:`.config`: :class:`ShapedPPOConfig`, RLlib's PPO with the shaping reward term;
- :mod:`.potential_shaping`: that term (``PotentialShaping``), the formula and its conventions,
  run per env slot as BK's code runs it;
- :mod:`.window_history`: the states before a chunk's first (and BK's padding at an episode's
  start), so that every window reads its whole history;
- :mod:`.potential`, :mod:`.sources`, :mod:`.window_memo`: what a potential source is, the
  loaders that build one from an artifact folder (``SourceSpec``, ``LazySource``), and the
  memo of windows already scored;
- :mod:`.code`, :mod:`.preference`, :mod:`.goals`: each form's offline builder and potential;
- :mod:`.settings`: BK's settings in a task file's ``knowledge:`` section.

The trajectory dataset its knowledge is learned from and the offline labeler helpers are
shared with other methods and stay in :mod:`rl_bk.knowledge`. The names load lazily, so that
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
