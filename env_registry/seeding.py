"""Distinct env seeds for every env of every env runner.

RLlib seeds env runner ``r``'s vector env with ``seed + r`` (``EnvRunner.__init__``), and
gymnasium's vector env seeds its sub-env ``i`` with that plus ``i``. With several runners the
ranges overlap: runner 1's envs get ``seed + 1 ... seed + n``, runner 2's ``seed + 2 ...
seed + n + 1``, so ``n - 1`` of runner 2's envs replay runner 1's levels one for one (a level
is drawn from the env's own generator at each reset, and the steps in between draw nothing).
BK's ``train_rs.py`` runs its 8 envs in one vector env: 8 seeds, 8 streams of levels; the
task's two runners of four envs had 5.

:class:`SeedPerRunner` moves runner ``r``'s reset seeds (``r >= 2``) by ``(r - 1) *``
:data:`RUNNER_SEED_SPREAD`, so every env of a trial plays levels of its own. Runner 0 (the
local one, which samples only when there are no remote runners) and runner 1 keep RLlib's
seeds, so a one-runner layout plays exactly the levels it played before.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym

#: A prime above any env runner's env count, and small enough that the runners of a trial
#: stay below RLlib's evaluation offset (1e6) for up to 99 runners.
RUNNER_SEED_SPREAD = 10_007


def runner_seed_offset(worker_index: int) -> int:
    """How far env runner ``worker_index``'s reset seeds move (0 for runners 0 and 1)."""
    return max(0, int(worker_index) - 1) * RUNNER_SEED_SPREAD


class SeedPerRunner(gym.Wrapper):
    """Adds the runner's offset to every seeded reset (RLlib seeds only the first)."""

    def __init__(self, env: gym.Env, worker_index: int):
        super().__init__(env)
        self.offset = runner_seed_offset(worker_index)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        return self.env.reset(seed=None if seed is None else seed + self.offset, options=options)
