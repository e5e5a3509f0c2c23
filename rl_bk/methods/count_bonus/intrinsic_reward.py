"""The count-based exploration bonus over step captions, for one train batch: each step earns
``coeff / sqrt(N(caption_t))``, ``N`` the caption's count over the whole run so far, this
occurrence included, the caption being the ``info["caption"]`` the env wrote after the step.
The counts live in the learner and the env runners never see the bonus. Details:
docs/methods.md#a-count-bonus-over-captions-count-bonus.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

import numpy as np

from rl_bk.connectors.learner.episode_chunks import EpisodeChunk
from rl_bk.methods.count_bonus.settings import CountBonusSettings

CAPTION_KEY = "caption"  # the info key every env's captioner writes


class CaptionCountBonus:
    """The :class:`~rl_bk.connectors.learner.intrinsic_rewards.IntrinsicRewardFn` of the
    count bonus: ``coeff / sqrt(N(caption))`` per real step."""

    def __init__(self, settings: CountBonusSettings | None = None):
        self.settings = settings or CountBonusSettings()
        self.counts: Counter[str] = Counter()
        self._steps = 0
        self._new = 0  # steps whose caption was new (metrics: a share of the run so far)

    def bonuses(self, captions: Sequence[str]) -> np.ndarray:
        """Counts ``captions`` in order and returns each one's bonus (float64)."""
        if isinstance(captions, str):
            raise TypeError("bonuses() takes a sequence of captions, not one string")
        n = np.empty(len(captions), np.float64)
        for i, caption in enumerate(captions):
            self.counts[caption] += 1
            n[i] = self.counts[caption]
        self._steps += len(captions)
        self._new += int((n == 1).sum())
        return self.settings.coeff / np.sqrt(n)

    def __call__(self, pieces: Sequence[EpisodeChunk], rl_module: Any) -> list[np.ndarray]:
        # infos[0] is the state before the chunk's first step: step t's caption is infos[t + 1]
        return [self.bonuses([str(i.get(CAPTION_KEY) or "") for i in p.infos[1:]]) for p in pieces]

    def metrics(self) -> dict[str, float]:
        return {
            "captions_seen": float(len(self.counts)),
            "new_caption_fraction": self._new / max(self._steps, 1),
        }
