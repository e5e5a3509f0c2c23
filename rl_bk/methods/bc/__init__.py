"""BC-PPO: flat PPO whose policy starts from behaviour cloning on a dataset, PTGM's baseline
for "is it the hierarchy or the data?": PTGM's low-level policy is cloned from a dataset that
flat PPO never sees, so BC-PPO clones the same dataset (a ``bc`` knowledge artifact) into PPO's
own policy before its first update, and a comparison with PTGM isolates the goal hierarchy
and the prior. The names load lazily, so that :mod:`.cloning` imports without Ray.
"""

from __future__ import annotations

from rl_bk.algorithms.lazy_names import lazy_names

_WHERE = {"BCPPO": "config", "BCPPOConfig": "config"}
__all__ = sorted(_WHERE)
__getattr__ = lazy_names(__name__, _WHERE)
