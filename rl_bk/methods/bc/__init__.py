"""BC-PPO: flat PPO whose policy starts from behaviour cloning on a dataset.

    from rl_bk.methods.bc import BCPPOConfig
    config = BCPPOConfig().environment(env).training(bc_dir=folder, bc_epochs=20)

PTGM's baseline for "is it the hierarchy or the data?": PTGM's low-level policy is cloned
from a dataset, and flat PPO never sees that data. BC-PPO clones the same dataset into PPO's
own policy before its first update, so a comparison with PTGM isolates the goal hierarchy and
the prior. ``folder`` is a ``bc`` knowledge artifact (``rl-bk knowledge build --kinds bc``).

The names load lazily so that :mod:`rl_bk.methods.bc.cloning` imports without Ray.
"""

from __future__ import annotations

from rl_bk.algorithms.lazy_names import lazy_names

_WHERE = {"BCPPO": "config", "BCPPOConfig": "config"}
__all__ = sorted(_WHERE)
__getattr__ = lazy_names(__name__, _WHERE)
