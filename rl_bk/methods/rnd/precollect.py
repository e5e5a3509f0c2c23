"""BK's stage 1 (``--precollect``): episodes from the current stochastic policy, during
training. With ``training(precollect_dir=...)``, every ``rnd.precollect_every_timesteps``
sampled env steps the algorithm runs ``precollect_episodes`` episodes, *sampling* its actions
(BK collects with the stochastic policy, for diverse data), and appends them to the trajectory
dataset there (BK: 50 episodes every 500k steps of a 5M-step RND run, about 500 episodes).
Each iteration's result carries ``precollect/episodes_written``.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

from ray.rllib.callbacks.callbacks import RLlibCallback
from ray.rllib.utils.metrics import (
    ENV_RUNNER_RESULTS,
    NUM_ENV_STEPS_SAMPLED,
    NUM_ENV_STEPS_SAMPLED_LIFETIME,
)

from rl_bk.knowledge.collect import collect_episodes
from rl_bk.knowledge.dataset import write_episodes

PRECOLLECT_RESULTS = "precollect"
EPISODES_WRITTEN_KEY = "episodes_written"


def precollect_now(algorithm: Any, env_steps: int | None = None) -> int:
    """Collects ``rnd.precollect_episodes`` episodes with ``algorithm``'s current stochastic
    policy into ``precollect_dir``; returns how many were written."""
    config = algorithm.config
    if not config.precollect_dir:
        raise ValueError("precollect_now needs training(precollect_dir=...)")
    steps = int(env_steps or 0)
    # Distinct per run seed and per collection point, so collections do not repeat episodes.
    seed = (config.seed or 0) * 10**9 + steps
    episodes = collect_episodes(
        algorithm,
        config.env,
        dict(config.env_config or {}),
        config.rnd.precollect_episodes,
        seed=seed,
        explore=True,
    )
    metadata = {
        "env": config.env,
        "collector": "rnd_ppo",
        "policy": "stochastic",
        "env_steps_sampled": steps,
    }
    # Part names sort by collection time (read_episodes reads parts in name order).
    part = f"steps{steps:012d}-{uuid.uuid4().hex[:8]}"
    write_episodes(Path(config.precollect_dir), episodes, metadata, part=part)
    return len(episodes)


class PrecollectEpisodes(RLlibCallback):
    """Runs :func:`precollect_now` whenever training crosses a multiple of
    ``rnd.precollect_every_timesteps`` sampled env steps, after a training iteration, in a
    local env built from the config's env name and env_config.
    :class:`~rl_bk.methods.rnd.config.RNDPPO` installs it beside the user's callbacks when
    ``precollect_dir`` is set; :func:`precollect_now` is the same collection on demand (once
    more after the last iteration, say). ``precollect/episodes_written`` counts the episodes
    this process has written so far (0 until the first collection)."""

    def __init__(self):
        super().__init__()
        self._last_interval: int | None = None
        self._episodes_written = 0

    def on_train_result(self, *, algorithm, metrics_logger=None, result: dict, **kwargs) -> None:
        config = algorithm.config
        if not config.precollect_dir:
            return
        runners = result.get(ENV_RUNNER_RESULTS, {})
        steps = int(runners.get(NUM_ENV_STEPS_SAMPLED_LIFETIME, 0))
        every = config.rnd.precollect_every_timesteps
        if self._last_interval is None:
            # The interval before this iteration's steps: 0 on a fresh run, the right one
            # after a restore from a checkpoint (no collection is repeated).
            self._last_interval = (steps - int(runners.get(NUM_ENV_STEPS_SAMPLED, 0))) // every
        if steps // every > self._last_interval:
            self._last_interval = steps // every
            self._episodes_written += precollect_now(algorithm, env_steps=steps)
        result.setdefault(PRECOLLECT_RESULTS, {})[EPISODES_WRITTEN_KEY] = self._episodes_written
