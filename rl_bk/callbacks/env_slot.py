"""Which env slot an episode ran in, written into the episode when it starts: BK's shaping
runs per env slot, as BK's rollout buffer holds the states, and RLlib's learner sees episode
chunks, not slots (docs/methods.md#bk-bk-code-bk-pref-bk-goal). One dictionary write per
episode start; nothing runs per env step.
"""

from __future__ import annotations

import itertools
from typing import Any

#: ``episode.custom_data`` keys.
ENV_SLOT = "env_slot"
SLOT_EPISODE = "slot_episode"

_started = itertools.count()  # per process, so per env runner: only order matters


def tag_env_slot(
    *, episode: Any, env_runner: Any = None, env_index: int = 0, **kwargs: Any
) -> None:
    """RLlib ``on_episode_start`` callback (``config.callbacks(on_episode_start=...)``).

    Tags the episode with its slot (``"<runner index>/<env index>"``) and a number that grows
    with each episode the runner starts, which orders one slot's episodes in time. BK's
    ``train_rs.py`` (after CleanRL's RND) normalises its potential with one discounted running
    sum per slot, running on across episodes, and charges an episode's first step against the
    last potential of the episode before it in the same slot. RLlib copies ``custom_data``
    into every later chunk of the episode (``SingleAgentEpisode.cut``), so every chunk
    carries both.
    """
    runner = int(getattr(env_runner, "worker_index", 0) or 0)
    episode.custom_data[ENV_SLOT] = f"{runner}/{int(env_index)}"
    episode.custom_data[SLOT_EPISODE] = next(_started)
