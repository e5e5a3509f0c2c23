"""ELLM's goal-conditioned policy: the observation carries the embedded text of the goals
suggested for the current state (ELLM's ``"Your goal is: <suggestions>."``, embedded), so the
policy can act on them. A gymnasium wrapper (:class:`GoalObservation`) appends it, so that the
episode records exactly what the policy saw and PPO's learner trains on the same input; the
suggestions are read at act time from a label queue in the env runner, never waited for.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import gymnasium as gym
import numpy as np
from ray.tune.registry import register_env

import env_registry
from rl_bk.labeling.embedding import SentenceEmbedder
from rl_bk.labeling.labeler import LabelerSpec
from rl_bk.labeling.queue import AsyncLabelQueue
from rl_bk.labeling.tasks import GoalsRequest
from rl_bk.methods.ellm.goal_matching import normalise
from rl_bk.methods.ellm.vocabulary import goal_synonyms

EMBEDDING_DIM = 384  # all-MiniLM-L6-v2
_QUEUES: dict[tuple, AsyncLabelQueue] = {}  # one per labeler and family in a process
_EMBEDDER: Any = None


def goal_text(goals: list[str]) -> str:
    """ELLM's goal sentence ("" when there is nothing to suggest)."""
    return f"Your goal is: {', '.join(goals)}." if goals else ""


def _queue(labeler: LabelerSpec, family: str, max_goals: int) -> AsyncLabelQueue:
    key = (labeler, family, max_goals)
    if key not in _QUEUES:
        _QUEUES[key] = AsyncLabelQueue(
            labeler.build,
            "goals",
            lambda caption: GoalsRequest(caption=caption, env=family, max_goals=max_goals),
            lambda label: list(label.goals),
        )
    return _QUEUES[key]


class GoalObservation(gym.ObservationWrapper):
    """Appends the embedded goal text to the env's flat observation: the packaged MiniLM's 384
    values of :func:`goal_text` (an env-to-module connector would not store it in the
    episode).

    The suggestions are read at act time from a per-process
    :class:`~rl_bk.labeling.queue.AsyncLabelQueue`: a caption with no suggestions yet is
    queued and gets the zero vector (the documented default, counted in
    ``info["goal_missing"]``); training never waits. Goals that were suggested for a state and
    achieved by the step from it (``info["achieved"]``, the same text after the family's
    synonyms) are left out for the rest of the episode, as ELLM's novelty filter does. Goal
    texts are embedded once each (cached), never an LLM call per step.

    Each env-runner process builds its own labeler from the
    :class:`~rl_bk.labeling.labeler.LabelerSpec` (the oracle costs nothing; for an LLM, reach
    the labeler app by ``serve_app`` or ``url`` rather than loading a model in every runner)
    and its own embedder.
    """

    def __init__(
        self,
        env: gym.Env,
        *,
        labeler: LabelerSpec,
        family: str,
        max_goals: int = 5,
        embedder: Any = None,
    ):
        super().__init__(env)
        space = env.observation_space
        if not isinstance(space, gym.spaces.Box) or len(space.shape) != 1:
            raise ValueError(f"GoalObservation needs a flat Box observation, got {space}")
        low = np.concatenate([space.low, -np.ones(EMBEDDING_DIM, np.float32)])
        high = np.concatenate([space.high, np.ones(EMBEDDING_DIM, np.float32)])
        self.observation_space = gym.spaces.Box(low, high, dtype=np.float32)
        self.queue = _queue(labeler, family, max_goals)
        self._embedder = embedder
        self._vectors: dict[str, np.ndarray] = {"": np.zeros(EMBEDDING_DIM, np.float32)}
        self._synonyms = goal_synonyms(family)
        self._paid: set[str] = set()  # suggested, then achieved: out of the goal text
        self._suggested: set[str] = set()  # what the goal text of the last state offered
        self._goal = self._vectors[""]

    def _embed(self, text: str) -> np.ndarray:
        if text not in self._vectors:
            global _EMBEDDER
            if self._embedder is None:
                if _EMBEDDER is None:
                    _EMBEDDER = SentenceEmbedder()
                self._embedder = _EMBEDDER
            self._vectors[text] = np.asarray(self._embedder.encode([text])[0], np.float32)
        return self._vectors[text]

    def _update(self, info: dict) -> None:
        achieved = {normalise(a, self._synonyms) for a in info.get("achieved") or []}
        self._paid |= achieved & self._suggested
        caption = str(info.get("caption") or "").strip()
        goals = self.queue.get(caption)
        if goals is None and caption:
            self.queue.ask([caption])
        fresh = [g for g in goals or [] if normalise(g, self._synonyms) not in self._paid]
        self._suggested = {normalise(g, self._synonyms) for g in fresh}
        text = goal_text(fresh)
        info["goal_text"], info["goal_missing"] = text, goals is None
        self._goal = self._embed(text)

    def reset(self, **kwargs: Any):
        obs, info = self.env.reset(**kwargs)
        self._paid, self._suggested = set(), set()
        self._update(info)
        return self.observation(obs), info

    def step(self, action: Any):
        obs, reward, terminated, truncated, info = self.env.step(action)
        self._update(info)
        return self.observation(obs), reward, terminated, truncated, info

    def observation(self, observation: np.ndarray) -> np.ndarray:
        return np.concatenate([np.asarray(observation, np.float32), self._goal])


def register_goal_conditioned_env(
    env: str, labeler: LabelerSpec, family: str, max_goals: int
) -> str:
    """Registers ``<env>+goal`` with RLlib (the task's env wrapped in :class:`GoalObservation`)
    and returns the name."""
    name = f"{env}+goal"

    def make(env_config: Mapping[str, Any]) -> gym.Env:
        return GoalObservation(
            env_registry.make_runner_env(env, env_config),
            labeler=labeler,
            family=family,
            max_goals=max_goals,
        )

    register_env(name, make)
    return name
