"""ELLM's goal-conditioned observation: the embedded suggestion text is appended, a caption
without suggestions yet gets zeros (and is queued, not waited for), and goals achieved this
episode leave the text."""

import gymnasium as gym
import numpy as np

from rl_bk.labeling.labeler import LabelerSpec
from rl_bk.labeling.queue import AsyncLabelQueue
from rl_bk.labeling.tasks import GoalsLabel, GoalsRequest
from rl_bk.methods.ellm import goal_observation
from rl_bk.methods.ellm.goal_observation import EMBEDDING_DIM, GoalObservation, goal_text


class CaptionEnv(gym.Env):
    """Captions and achievements from a script; a 2-value observation."""

    observation_space = gym.spaces.Box(-1, 1, (2,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def __init__(self, script):
        self.script, self.t = script, 0

    def reset(self, *, seed=None, options=None):
        self.t = 0
        return np.zeros(2, np.float32), {"caption": self.script[0][0], "achieved": []}

    def step(self, action):
        self.t += 1
        caption, achieved = self.script[self.t]
        info = {"caption": caption, "achieved": achieved}
        return np.ones(2, np.float32), 0.0, False, False, info


class Embedder:
    def __init__(self):
        self.calls = []

    def encode(self, texts):
        self.calls += texts
        return np.full((len(texts), EMBEDDING_DIM), 1.0 / len(texts[0]), np.float32)


def test_the_goal_text_is_appended_missing_suggestions_give_zeros_and_achieved_goals_leave(
    monkeypatch,
):
    suggestions = {"tree near": ["collect wood", "eat cow"]}

    def labeler(task, requests):
        return [GoalsLabel(goals=suggestions[r.caption]) for r in requests]

    q = AsyncLabelQueue(
        lambda: labeler,
        "goals",
        lambda c: GoalsRequest(caption=c),
        lambda label: list(label.goals),
        start=False,
    )
    monkeypatch.setattr(goal_observation, "_queue", lambda *a: q)
    embedder = Embedder()
    env = GoalObservation(
        CaptionEnv([("tree near", []), ("tree near", []), ("tree near", ["collect wood"])]),
        labeler=LabelerSpec(),
        family="crafter",
        embedder=embedder,
    )
    assert env.observation_space.shape == (2 + EMBEDDING_DIM,)
    obs, info = env.reset()
    assert info["goal_missing"] and not obs[2:].any()  # no suggestions yet: zeros, not a wait
    assert q.pending == 1
    q.start()
    assert q.wait_until_idle(5)
    obs, _, _, _, info = env.step(0)
    text = goal_text(["collect wood", "eat cow"])
    assert info["goal_text"] == text == "Your goal is: collect wood, eat cow."
    np.testing.assert_allclose(obs[2:], 1.0 / len(text))
    obs, _, _, _, info = env.step(0)  # wood collected: that goal leaves the text
    assert info["goal_text"] == "Your goal is: eat cow."
    obs, info = env.reset()  # a new episode: every goal is back
    assert info["goal_text"] == text
    assert embedder.calls.count(text) == 1  # each goal text embedded once
    q.close()


def test_only_goals_that_were_offered_and_then_achieved_leave(monkeypatch):
    # ELLM's novelty filter: wood achieved while nothing was suggested stays a goal; "attack
    # cow" offered and "eat cow" achieved is the same goal (Crafter's synonyms) and leaves.
    suggestions = {"bare": [], "cow near": ["collect wood", "attack cow"]}

    def labeler(task, requests):
        return [GoalsLabel(goals=suggestions[r.caption]) for r in requests]

    q = AsyncLabelQueue(
        lambda: labeler,
        "goals",
        lambda c: GoalsRequest(caption=c),
        lambda label: list(label.goals),
        start=False,
    )
    monkeypatch.setattr(goal_observation, "_queue", lambda *a: q)
    q.ask(["bare", "cow near"])
    q.start()
    assert q.wait_until_idle(5)
    env = GoalObservation(
        CaptionEnv([("bare", []), ("cow near", ["collect wood"]), ("cow near", ["eat cow"])]),
        labeler=LabelerSpec(),
        family="crafter",
        embedder=Embedder(),
    )
    env.reset()
    _, _, _, _, info = env.step(0)  # wood achieved, but it was not on offer: it stays
    assert info["goal_text"] == "Your goal is: collect wood, attack cow."
    _, _, _, _, info = env.step(0)
    assert info["goal_text"] == "Your goal is: collect wood."
    q.close()
