"""ELLM's intrinsic reward for one train batch: suggestions for the captions of the batch, from
the labeler (``"llm"``) or every goal of the env's vocabulary (``"novelty"``, ELLM's
baseline), matched against what each step achieved by
:class:`~.goal_matching.GoalMatcher`. Unlike ONI, the batch waits for its suggestions; why:
:class:`ELLMIntrinsicReward`, and docs/methods.md#online-labelling-ellm-and-oni.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from rl_bk.connectors.learner.episode_chunks import EpisodeChunk
from rl_bk.labeling.labeler import LabelerSpec
from rl_bk.labeling.queue import AsyncLabelQueue
from rl_bk.labeling.tasks import GoalsRequest
from rl_bk.methods.ellm.goal_matching import EpisodePiece, GoalMatcher
from rl_bk.methods.ellm.settings import ELLMSettings
from rl_bk.methods.ellm.vocabulary import goal_synonyms, novelty_goals

SUGGESTERS = ("llm", "novelty")
#: Suggestions asked per caption when a task does not say: ELLM's oracle lists every feasible
#: goal (no cut); an LLM is asked for a short list (ELLM's few-shot prompt shows three).
ORACLE_MAX_GOALS, LLM_MAX_GOALS = 32, 5


def resolve_max_goals(max_goals: int | None, labeler: LabelerSpec | None) -> int:
    if max_goals is not None:
        return max_goals
    oracle = labeler is not None and labeler.backend == "oracle"
    return ORACLE_MAX_GOALS if oracle else LLM_MAX_GOALS


class ELLMIntrinsicReward:
    """The :class:`~rl_bk.connectors.learner.intrinsic_rewards.IntrinsicRewardFn` of ELLM.

    Per step ``t`` of a chunk: the suggestions are those for the caption of the state before
    the step (``info["caption"]``), the achieved texts are the env's ``info["achieved"]`` after
    it, and :class:`~.goal_matching.GoalMatcher` pays the match once per goal per episode.
    Where the suggestions come from (``suggester``):

    - ``"llm"``: the labeler (``goals`` task, constrained to the env's goal vocabulary), asked
      once per train batch for the captions of the states a step achieved something from
      (only those can pay), through the label store. The batch waits for them up to
      ``label_timeout_s`` (logged as ``label_wait_seconds``); a step whose suggestions did not
      come pays 0 and is counted. Why wait, when ONI never does: ELLM's reward for a step
      needs the suggestions for that very state, and on Crafter almost every caption is new
      (the inventory counts change), so suggestions that arrive later would never be used.
      Asking only for achieving states keeps it to a few captions per batch. With the
      ``oracle`` backend this is ELLM's oracle baseline (every goal whose prerequisites the
      caption shows), which must be reported as oracle;
    - ``"novelty"``: every goal of the env's vocabulary (ELLM's "novelty" baseline: any first
      achievement of an episode pays). No labels.

    The weighted reward is ``ellm_coeff * r``.
    """

    def __init__(
        self,
        *,
        suggester: str = "llm",
        labeler: LabelerSpec | None = None,
        family: str,
        settings: ELLMSettings | None = None,
        **overrides: Any,
    ):
        """``settings``: ELLM's settings (the task file's ``ellm:`` section), with
        ``overrides`` (any of its fields) in place."""
        if suggester not in SUGGESTERS:
            raise ValueError(
                f"unknown ELLM suggester {suggester!r}; valid: {', '.join(SUGGESTERS)}"
            )
        if suggester == "llm" and labeler is None:
            raise ValueError("the 'llm' suggester needs a labeler (LabelerSpec)")
        self.settings = (settings or ELLMSettings()).updated(overrides)
        self.suggester, self.labeler, self.family = suggester, labeler, family
        self.max_goals = resolve_max_goals(self.settings.max_goals, labeler)
        synonyms = goal_synonyms(family)
        threshold = self.settings.threshold
        self.matcher = (
            GoalMatcher(synonyms=synonyms)
            if threshold is None
            else GoalMatcher(threshold=threshold, synonyms=synonyms)
        )
        self._all_goals = list(novelty_goals(family)) if suggester == "novelty" else []
        self._queue: AsyncLabelQueue | None = None
        self._waited = 0.0

    @property
    def queue(self) -> AsyncLabelQueue:
        if self._queue is None:
            self._queue = AsyncLabelQueue(
                self.labeler.build,
                "goals",  # type: ignore[union-attr]
                lambda key: GoalsRequest(
                    caption=key[0], mission=key[1], env=self.family, max_goals=self.max_goals
                ),
                lambda label: list(label.goals),
                batch_size=self.settings.label_batch_size,
            )
        return self._queue

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state["_queue"] = None
        return state

    def _key(self, info: dict) -> tuple[str, str | None]:
        mission = info.get("mission") if self.settings.include_mission else None
        return str(info.get("caption") or "").strip(), (str(mission) if mission else None)

    def __call__(self, pieces: Sequence[EpisodeChunk], rl_module: Any) -> list[np.ndarray]:
        keys = [[self._key(i) for i in p.infos[:-1]] for p in pieces]
        achieved = [[list(i.get("achieved") or []) for i in p.infos[1:]] for p in pieces]
        if self.suggester == "novelty":
            suggestions = [[self._all_goals] * len(ks) for ks in keys]
        else:
            suggestions = self._suggestions(keys, achieved)
        matched = self.matcher.rewards(
            [
                EpisodePiece(p.episode_id, s, a, p.ends_episode)
                for p, s, a in zip(pieces, suggestions, achieved)
            ]
        )
        return [self.settings.ellm_coeff * np.asarray(r, np.float64) for r in matched]

    def _suggestions(
        self, keys: list[list[tuple]], achieved: list[list[list[str]]]
    ) -> list[list[list[str] | None]]:
        """The labeler's goals for the states a step achieved something from (no other step
        can pay, and achievements are a few per hundred steps), asked in one batch and waited
        for up to ``label_timeout_s``; [] for the other states, None where no label came."""
        q = self.queue
        needed = list(
            dict.fromkeys(
                k for ks, acs in zip(keys, achieved) for k, a in zip(ks, acs) if a and k[0]
            )
        )
        if needed:
            q.ask(needed)
            if self.settings.label_timeout_s > 0:
                started = time.perf_counter()
                q.wait_for(needed, self.settings.label_timeout_s)
                self._waited += time.perf_counter() - started
        return [[q.get(k) if a else [] for k, a in zip(ks, acs)] for ks, acs in zip(keys, achieved)]

    def metrics(self) -> dict[str, float]:
        out = dict(self.matcher.metrics())
        if self._queue is not None:
            out.update(self._queue.metrics())
            out["labeler_failed_to_start"] = float(self._queue.error is not None)
            out["label_wait_seconds"] = self._waited
        return out
