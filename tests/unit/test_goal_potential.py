"""BK-Goal: the goal list builder and the retrieval potential, checked by hand with a stub
embedder (a fixed table of unit vectors) and a scripted labeler."""

import pickle

import numpy as np
import pytest

from rl_bk.knowledge.trajectory import Chunk, caption_history, windows
from rl_bk.labeling.tasks import GoalsLabel
from rl_bk.methods.bk.goals.builder import GoalList, build_goal_list, normalize_goal
from rl_bk.methods.bk.goals.potential import GoalPotential, sentences, transition_text

E = np.eye(4, dtype=np.float32)
CHUNK = Chunk(np.zeros((2, 3)), ["c0", "c1"], [0])
W0, W1 = windows(CHUNK, 4)
H0 = caption_history(W0, None)  # state 0's query: "Current observation: c0"
H1 = caption_history(W1, None)  # state 1's query: "Step 1: c0 You choose ...\nCurrent ..."
T1 = transition_text(W1, None)  # "c0 You choose the action: action 0. Current observation: c1"


class TableEmbedder:
    """Known texts only; records every encode call, to check batching and de-duplication."""

    def __init__(self, table):
        self.table = {k: np.asarray(v, np.float32) / np.linalg.norm(v) for k, v in table.items()}
        self.calls = []

    def encode(self, texts):
        self.calls.append(list(texts))
        return np.stack([self.table[t] for t in texts])


def stub(**extra):
    """Whole texts (embedding="texts"): every text the potential may ask for, by hand."""
    return TableEmbedder(
        {
            "keyA": E[0],
            "keyB": E[1],  # the keys (history texts)
            "go to a": E[0],
            "go to b": E[3],  # the goals
            H0: E[0],
            "c0": E[0],  # state 0: query; transition (a first state: its caption)
            H1: [0.6, 0.8, 0.0, 0.0],  # state 1's query: nearer keyB (0.8) than keyA (0.6)
            T1: [0.6, 0.0, 0.8, 0.0],  # state 1's transition: 0.6 to "go to a", 0 to "go to b"
            **extra,
        }
    )


def goal_list():
    return GoalList(goals=["go to a", "go to b"], keys=["keyA", "keyB"], key_goals=[[0], [1]])


@pytest.mark.parametrize(
    ("top_k", "threshold", "expected"),
    [
        (1, 0.5, [1.0, 0.0]),  # state 1 retrieves only kB, whose goal is orthogonal to T1
        (2, 0.5, [1.0, 0.6]),  # with kA's goal too, T1 matches "go to a" at 0.6
        (2, 0.7, [1.0, 0.0]),  # 0.6 is below the threshold: Phi = 0, not 0.6
        (2, 1.0, [0.0, 0.0]),  # BK's strict ">": a match equal to the threshold gives 0
    ],
)
def test_top_k_retrieval_and_threshold_by_hand(top_k, threshold, expected):
    embedder = stub()
    pot = GoalPotential(
        goal_list(),
        top_k=top_k,
        threshold=threshold,
        horizon=4,
        embedding="texts",
        embedder=embedder,
    )
    (phi,) = pot([CHUNK])
    np.testing.assert_allclose(phi, expected, atol=1e-6)
    # Index once (keys and goals), then one call per batch over its distinct texts.
    assert embedder.calls[0] == ["keyA", "keyB", "go to a", "go to b"]
    assert embedder.calls[1] == [H0, H1, "c0", T1]
    # Windows already scored are remembered across batches: no new call, the same values.
    for phi in pot([CHUNK, CHUNK]):
        np.testing.assert_allclose(phi, expected, atol=1e-6)
    assert len(embedder.calls) == 2 and pot.metrics()["window_memo_hit_rate"] == 4 / 6


def test_sentence_mode_averages_sentence_vectors():
    act = "You choose the action: action 0"
    assert sentences(H1) == sentences(T1) == ["c0", act, "c1"]
    assert sentences("You see a wall. You see a key You choose the action: turn left.") == [
        "You see a wall",
        "You see a key",
        "You choose the action: turn left",
    ]
    embedder = TableEmbedder(
        {
            "keyA": E[0],
            "keyB": E[1],
            "go to a": E[0],
            "go to b": E[3],
            "c0": E[0],
            act: E[3],
            "c1": E[2],
        }
    )
    pot = GoalPotential(goal_list(), top_k=2, threshold=0.5, embedder=embedder)
    # State 0: "c0" = "go to a": 1. State 1: transition = (E0 + E3 + E2) / sqrt(3): 0.577 to
    # either goal, above 0.5.
    np.testing.assert_allclose(pot([CHUNK])[0], [1.0, 3**-0.5], atol=1e-6)
    assert sorted(embedder.calls[1]) == sorted(["c0", act, "c1"])  # each sentence once
    np.testing.assert_allclose(pot.vectors([T1])[0], np.array([1, 0, 1, 1]) / 3**0.5, atol=1e-6)
    pot.threshold = 0.6
    np.testing.assert_allclose(pot([CHUNK])[0], [1.0, 0.0], atol=1e-6)


def test_empty_goal_list_gives_zero_and_metrics_count():
    pot = GoalPotential(GoalList(goals=[], keys=[], key_goals=[]), embedder=stub())
    np.testing.assert_array_equal(pot([CHUNK])[0], [0.0, 0.0])
    assert pot.metrics()["states"] == 2.0


def test_pickles_without_its_index():
    pot = GoalPotential(goal_list(), top_k=2, threshold=0.5, embedding="texts", embedder=stub())
    pot([CHUNK])
    clone = pickle.loads(pickle.dumps(pot))
    assert clone._index is None
    np.testing.assert_allclose(clone([CHUNK])[0], [1.0, 0.6], atol=1e-6)


def test_from_dir_reads_goals_json(tmp_path):
    goal_list().save(tmp_path)
    pot = GoalPotential.from_dir(
        tmp_path, top_k=1, threshold=0.5, embedding="texts", embedder=stub()
    )
    np.testing.assert_allclose(pot([CHUNK])[0], [1.0, 0.0], atol=1e-6)


# ------------------------------------------------------------------------------- builder
def test_normalize_goal():
    assert normalize_goal("  Go to the  RED ball.  ") == "go to the red ball"
    assert normalize_goal("open the door!?") == "open the door"


def scripted_labeler(answers, fail_batches=()):
    """Answers goals requests from a script, in order; records what it was asked."""
    state = {"i": 0, "batches": 0, "requests": []}

    def labeler(task, requests):
        assert task == "goals"
        state["batches"] += 1
        if state["batches"] in fail_batches:
            raise RuntimeError("backend down")
        state["requests"] += requests
        out = []
        for _ in requests:
            out.append(GoalsLabel(goals=answers[state["i"] % len(answers)]))
            state["i"] += 1
        return out

    return labeler, state


def test_builder_deduplicates_goals_and_saves(tmp_path):
    episodes = [Chunk(np.zeros((9, 2)), [f"s{i}" for i in range(9)], [0, 1] * 4, mission="m")]
    answers = [
        ["Go to the red ball.", "open the door"],
        ["go to the red ball", "OPEN the door!"],
        [],
    ]
    labeler, state = scripted_labeler(answers)
    goals = build_goal_list(
        labeler,
        episodes,
        tmp_path,
        family="babyai",
        mission="go to the red ball",
        iterations=6,
        seed=1,
    )
    assert goals.goals == ["go to the red ball", "open the door"]
    assert goals.counts["empty"] == 2 and goals.counts["answers"] == 8
    assert all(ids == [0, 1] for ids in goals.key_goals)
    assert 1 <= len(goals.keys) <= 4 and len(goals.key_goals) == len(goals.keys)
    # Keys are BK's history texts of the 3-step segments (4 states).
    assert all(k.startswith("Step 1: s") and k.count("\n") == 3 for k in goals.keys)
    req = state["requests"][0]
    assert req.mission == "go to the red ball" and req.env == "babyai" and len(req.history) == 3
    assert req.history[0].endswith("You choose the action: turn left.")
    assert GoalList.load(tmp_path) == goals


def test_builder_retries_a_failed_batch_one_by_one_and_skips_what_fails_alone(tmp_path):
    episodes = [Chunk(np.zeros((9, 2)), [f"s{i}" for i in range(9)], [0] * 8)]
    # Call 1 (a batch of 16) fails; its 16 requests are retried alone, and call 2 (the first
    # of them) fails too: only that segment is lost. Then the last batch of 4.
    labeler, state = scripted_labeler([["explore"]], fail_batches=(1, 2))
    goals = build_goal_list(labeler, episodes, tmp_path, family=None, iterations=20)
    assert goals.counts["failed"] == 1 and goals.goals == ["explore"]
    assert state["batches"] == 1 + 16 + 1 and len(state["requests"]) == 19


class HashEmbedder:
    """A fixed random unit vector per string: any text the potential asks for has one."""

    def encode(self, texts):
        out = []
        for t in texts:
            v = np.random.default_rng(abs(hash(t)) % 2**32).normal(size=16)
            out.append(v / np.linalg.norm(v))
        return np.asarray(out, np.float32)


def test_fast_path_equals_the_whole_text_reference_on_real_captions():
    """__call__ sums sentence vectors per caption and action; potentials() splits the windows'
    whole texts. Same numbers, on captions with several sentences, commas, no final stop."""
    captions = [
        "You see a wall 2 steps forward. You see a red ball 1 step left and 2 steps forward",
        "You see a wall 1 step forward.",
        "You see a grey box 3 steps right. You carry a key! You see a red ball 1 step left",
        "you see tree, grass, and water. you are targeting tree. you feel thirsty.",
        "You see a wall 2 steps forward. You see a red ball 1 step left and 2 steps forward",
    ]
    rng = np.random.default_rng(0)
    chunks = []
    for n in (6, 1, 9):
        caps = [captions[i] for i in rng.integers(len(captions), size=n + 1)]
        chunks.append(Chunk(np.zeros((n + 1, 2)), caps, rng.integers(7, size=n)))
    gl = GoalList(
        goals=["go to the red ball", "chop tree", "open the door"],
        keys=[caption_history(w, "babyai") for w in windows(chunks[0], 4)[:3]],
        key_goals=[[0], [1, 2], [2]],
        family="babyai",
    )
    for horizon in (1, 2, 4):
        fast = GoalPotential(gl, top_k=2, threshold=-1.0, horizon=horizon, embedder=HashEmbedder())
        reference = pickle.loads(pickle.dumps(fast))
        got = np.concatenate(fast(chunks))
        want = reference.potentials([w for c in chunks for w in windows(c, horizon)])
        np.testing.assert_allclose(got, want, atol=1e-5)
        np.testing.assert_allclose(np.concatenate(fast(chunks[::-1])[::-1]), want, atol=1e-5)


def test_saved_sentence_vectors_spare_the_trial_from_encoding_the_dataset(tmp_path):
    from rl_bk.methods.bk.goals.potential import save_sentence_vectors

    captions = ["You see a red ball 2 steps forward", "You see a wall 1 step left. You carry a key"]
    chunk = Chunk(np.zeros((3, 2)), [captions[0], captions[1], "You see a grey box"], [2, 0])
    gl = GoalList(
        goals=["go to the red ball"],
        keys=["Current observation: x"],
        key_goals=[[0]],
        family="babyai",
    )
    gl.save(tmp_path)
    save_sentence_vectors(tmp_path, captions, "babyai")
    pot = GoalPotential.from_dir(tmp_path, threshold=-1.0)
    encoded_for_index = 2  # the key and the goal
    (phi,) = pot([chunk])
    # Only the one sentence the dataset never showed was encoded during the call.
    assert pot.metrics()["encoded_per_call"] == encoded_for_index + 1
    fresh = GoalPotential(GoalList.load(tmp_path), threshold=-1.0, embedder=pot._embedder)
    (want,) = fresh([chunk])
    np.testing.assert_allclose(phi, want, atol=1e-5)
