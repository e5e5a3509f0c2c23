"""PTGM pre-training: codebook, hindsight relabelling, prior labels, BC, save/load.

Tiny hand-made episodes; embeddings are the "observation" kind or come from a fake text
encoder, so MiniLM is never loaded here.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch

from rl_bk.knowledge.trajectory import Chunk
from rl_bk.methods.ptgm.pretraining import (
    Codebook,
    PTGMModels,
    assign,
    build_codebook,
    build_ptgm,
    hindsight_examples,
    prior_examples,
    split_by_episode,
    state_embeddings,
    train_low_level,
)

torch.set_num_threads(1)


def unit(deg: float) -> list[float]:
    return [math.cos(math.radians(deg)), math.sin(math.radians(deg))]


def episode(obs, actions, captions=None, eid="") -> Chunk:
    obs = np.asarray(obs, np.float32)
    caps = captions if captions is not None else [f"s{i}" for i in range(len(obs))]
    return Chunk(observations=obs, captions=caps, actions=actions, episode_id=eid)


class FakeEncoder:
    """Deterministic text -> vector; remembers what it was asked to encode."""

    def __init__(self, table: dict[str, list[float]]) -> None:
        self.table = table
        self.calls: list[list[str]] = []

    def encode(self, texts):
        self.calls.append(list(texts))
        return np.asarray([self.table[t] for t in texts], np.float32)


# -- embeddings ---------------------------------------------------------------------------


def test_caption_embeddings_encode_each_distinct_caption_once_and_normalise():
    enc = FakeEncoder({"a": [3.0, 4.0], "b": [0.0, 2.0], "c": [0.0, 0.0]})
    eps = [
        episode(np.zeros((3, 1)), [0, 0], ["a", "b", "a"]),
        episode(np.zeros((2, 1)), [0], ["b", "c"]),
    ]
    out = state_embeddings(eps, "caption-minilm", embedder=enc)
    assert enc.calls == [["a", "b", "c"]]
    assert [e.shape for e in out] == [(3, 2), (2, 2)] and out[0].dtype == np.float32
    np.testing.assert_allclose(out[0], [[0.6, 0.8], [0, 1], [0.6, 0.8]], atol=1e-6)
    np.testing.assert_allclose(out[1], [[0, 1], [0, 0]])  # a zero vector stays zero


def test_observation_embeddings_are_normalised_observations():
    out = state_embeddings([episode([[3, 4], [0, 5]], [1])], "observation")
    np.testing.assert_allclose(out[0], [[0.6, 0.8], [0, 1]], atol=1e-6)
    with pytest.raises(ValueError, match="unknown embedding kind"):
        state_embeddings([], "pixels")  # type: ignore[arg-type]


# -- codebook -----------------------------------------------------------------------------


def three_clusters() -> np.ndarray:
    """Three clusters of three unit vectors around 0°, 120° and 240°; the middle one of each
    (rows 1, 4, 7) is nearest its cluster's centre (the mean lies on the middle direction)."""
    return np.asarray([unit(c + d) for c in (0, 120, 240) for d in (-10, 0, 10)], np.float32)


def test_codebook_codes_are_the_real_samples_nearest_the_centres():
    x = three_clusters()
    caps = [f"c{i}" for i in range(9)]
    book = build_codebook(x, n_goals=3, seed=0, captions=caps)
    assert len(book) == 3 and book.n_requested == 3
    assert sorted(book.sample_index.tolist()) == [1, 4, 7]
    np.testing.assert_allclose(book.vectors, x[book.sample_index], atol=1e-6)
    assert book.captions == [caps[i] for i in book.sample_index]
    assert book.counts.tolist() == [3, 3, 3]
    code_of = {int(s): j for j, s in enumerate(book.sample_index)}
    # every row goes to its own cluster's code; a long off-unit query by cosine
    expected = [code_of[1]] * 3 + [code_of[4]] * 3 + [code_of[7]] * 3
    assert assign(book, x).tolist() == expected
    assert assign(book, np.asarray([[10.0, 0.5]], np.float32)).tolist() == [code_of[1]]


def test_assign_is_argmax_cosine_by_hand():
    book = Codebook(
        vectors=[[1, 0], [0, 1], [-1, 0]],
        sample_index=[0, 1, 2],
        captions=["e", "n", "w"],
        counts=[0, 0, 0],
    )
    q = np.asarray([[2, 1], [0.1, 0.5], [-3, -2.9], [1, 1], [0.01, -5]], np.float32)
    # (1, 1) ties east and north: the lower index wins; (0.01, -5): cosines .002, -1, -.002
    assert assign(book, q).tolist() == [0, 1, 2, 0, 0]
    assert assign(book, q).dtype == np.int64


def test_codebook_shrinks_when_there_are_fewer_distinct_vectors_than_goals():
    x = np.asarray([unit(0), unit(0), unit(90), unit(0), unit(90), unit(90)], np.float32)
    book = build_codebook(x, n_goals=4, seed=0)
    assert len(book) == 2 and book.n_requested == 4
    assert sorted(book.sample_index.tolist()) == [0, 2]  # first occurrence of each vector
    assert book.captions == ["", ""] and sorted(book.counts.tolist()) == [3, 3]


def test_codebook_subsample_indexes_the_full_array_and_counts_everything():
    x = np.tile(three_clusters(), (10, 1))
    book = build_codebook(x, n_goals=3, seed=1, max_samples=20)
    assert np.all(book.sample_index < len(x)) and book.counts.sum() == len(x)
    np.testing.assert_allclose(book.vectors, x[book.sample_index], atol=1e-6)


# -- hindsight relabelling and prior labels -----------------------------------------------


def test_hindsight_goal_is_the_state_two_ahead_clipped_at_the_end():
    eps = [episode(np.arange(6)[:, None] + 0.5, [0, 1, 2, 0, 1]), episode([[10.0], [11.0]], [2])]
    emb = [np.eye(8, dtype=np.float32)[:6], np.eye(8, dtype=np.float32)[6:]]
    obs, goals, actions = hindsight_examples(eps, emb, 2, 2, np.random.default_rng(0))
    # 5 + 1 states with an action; the final states make no example
    assert obs.shape == (6, 1) and goals.shape == (6, 8) and actions.tolist() == [0, 1, 2, 0, 1, 2]
    np.testing.assert_array_equal(obs[:, 0], [0.5, 1.5, 2.5, 3.5, 4.5, 10.0])
    # episode 1: t=0..2 -> states 2, 3, 4; t=3, 4 -> clipped to the last state 5
    # episode 2: t=0 -> clipped to its last state (row 7 of the identity)
    assert goals.argmax(1).tolist() == [2, 3, 4, 5, 5, 7]


def test_hindsight_random_gaps_stay_in_range():
    n = 30
    ep = episode(np.zeros((n + 1, 1)), np.zeros(n, int))
    _, goals, _ = hindsight_examples(
        [ep], [np.eye(n + 1, dtype=np.float32)], 1, 3, np.random.default_rng(5)
    )
    target = goals.argmax(1)
    t = np.arange(n)
    assert np.all(target >= np.minimum(t + 1, n)) and np.all(target <= np.minimum(t + 3, n))
    assert len(set((target - t)[:-3].tolist())) == 3  # all three gaps occur
    with pytest.raises(ValueError):
        hindsight_examples([ep], [np.eye(n + 1)], 0, 2, np.random.default_rng(0))


def test_prior_label_is_the_code_of_the_state_k_ahead():
    book = Codebook(
        vectors=np.eye(3), sample_index=[0, 1, 2], captions=["a", "b", "c"], counts=[0, 0, 0]
    )
    e = np.eye(3, dtype=np.float32)
    emb = np.stack([e[0], e[1], e[2], 0.9 * e[0] + 0.1 * e[1], e[1]])  # codes 0 1 2 0 1
    ep = episode(np.arange(5)[:, None], [0, 0, 0, 0])
    obs, labels = prior_examples([ep], [emb], book, 2, 2, np.random.default_rng(0))
    # t=0 -> state 2 (code 2), t=1 -> 3 (0), t=2 -> 4 (1), t=3 -> clipped to 4 (1)
    assert labels.tolist() == [2, 0, 1, 1] and obs[:, 0].tolist() == [0, 1, 2, 3]
    _, labels1 = prior_examples([ep], [emb], book, 1, 1, np.random.default_rng(0))
    assert labels1.tolist() == [1, 2, 0, 1]


def test_split_by_episode_is_disjoint_and_seeded():
    train, held = split_by_episode(20, 0.1, seed=3)
    assert len(held) == 2 and sorted([*train, *held]) == list(range(20))
    assert split_by_episode(20, 0.1, 3)[1].tolist() == held.tolist()
    assert len(split_by_episode(1, 0.1, 0)[1]) == 0


# -- training, models, save/load ----------------------------------------------------------


def toy_episodes(n_episodes: int = 24, n: int = 12, seed: int = 0) -> list[Chunk]:
    """State t+1 shows the action taken at t as a one-hot, so with a gap of 1 the goal names
    the action; state 0 is all ones. Captions say the same in words."""
    rng = np.random.default_rng(seed)
    eps = []
    for i in range(n_episodes):
        actions = rng.integers(0, 3, n)
        obs = np.vstack([np.ones((1, 3)), np.eye(3)[actions]]).astype(np.float32)
        caps = ["start"] + [f"did {a}" for a in actions]
        eps.append(episode(obs, actions, caps, eid=f"ep{i}"))
    return eps


TOY_TEXT = {"start": [1.0, 1.0, 1.0], "did 0": [1, 0, 0], "did 1": [0, 1, 0], "did 2": [0, 0, 1]}


def test_behaviour_cloning_learns_an_action_named_by_the_goal():
    torch.manual_seed(0)
    eps = toy_episodes()
    emb = state_embeddings(eps, "observation")
    model, report = train_low_level(
        eps,
        emb,
        min_gap=1,
        max_gap=1,
        epochs=15,
        batch_size=32,
        lr=1e-2,
        hidden=(32,),
        holdout=0.2,
        seed=0,
    )
    assert report["held_out_episodes"] == 5 and report["train_episodes"] == 19
    assert report["held_out_accuracy"] >= 0.95 and report["train_accuracy"] >= 0.95
    assert report["held_out_majority_accuracy"] < 0.6
    assert not model.training and not any(p.requires_grad for p in model.parameters())


def build_toy(tmp_path, name="m", **kw):
    args = {
        "n_goals": 4,
        "embedding": "caption-minilm",
        "low_level_gap": (1, 1),
        "prior_gap": (1, 2),
        "epochs": 3,
        "batch_size": 64,
        "hidden": (16, 16),
        "holdout": 0.2,
        "seed": 7,
        "prior_epochs": 2,
        "embedder": FakeEncoder(TOY_TEXT),
        **kw,
    }
    return build_ptgm(toy_episodes(), tmp_path / name, **args)


def test_build_save_load_round_trip(tmp_path):
    report = build_toy(tmp_path)
    folder = tmp_path / "m"
    assert {p.name for p in folder.iterdir()} == {"ptgm.pt", "codebook.npz", "ptgm.json"}
    assert json.loads((folder / "ptgm.json").read_text())["n_goals"] == report["n_goals"] == 4
    assert sorted(report["goal_captions"]) == ["did 0", "did 1", "did 2", "start"]
    assert report["prior"]["held_out_majority_accuracy"] is not None
    assert report["prior"]["held_out_nll"] > 0 and report["prior"]["held_out_marginal_nll"] > 0
    assert report["settings"]["prior_epochs"] == 2

    models = PTGMModels.load(folder)
    assert (models.n_goals, models.obs_dim, models.n_actions) == (4, 3, 3)
    assert not any(p.requires_grad for p in models.low_level.parameters())
    again = PTGMModels.load(folder)
    obs = np.random.default_rng(0).random((50, 3)).astype(np.float32)
    ids = np.arange(50) % 4
    a1 = models.low_level_actions(obs, ids, greedy=True, rng=None)
    np.testing.assert_array_equal(a1, again.low_level_actions(obs, ids, greedy=True, rng=None))
    obs_t = torch.from_numpy(obs)
    assert torch.equal(models.prior_logits(obs_t), again.prior_logits(obs_t))
    assert models.prior_logits(obs_t).shape == (50, 4)
    np.testing.assert_array_equal(models.codebook.vectors, again.codebook.vectors)
    assert models.codebook.captions == report["goal_captions"]


def test_build_is_deterministic_for_a_seed(tmp_path):
    r1, r2 = build_toy(tmp_path, "a"), build_toy(tmp_path, "b")
    r1.pop("seconds"), r2.pop("seconds")
    assert r1 == r2
    m1, m2 = PTGMModels.load(tmp_path / "a"), PTGMModels.load(tmp_path / "b")
    obs = torch.rand(8, 3)
    assert torch.equal(m1.prior_logits(obs), m2.prior_logits(obs))


def test_low_level_actions_sampled_and_greedy(tmp_path):
    build_toy(tmp_path)
    models = PTGMModels.load(tmp_path / "m")
    obs = np.tile(np.eye(3, dtype=np.float32), (700, 1))  # B = 2100
    ids = np.arange(len(obs)) % models.n_goals
    greedy = models.low_level_actions(obs, ids, greedy=True, rng=None)
    s1 = models.low_level_actions(obs, ids, greedy=False, rng=np.random.default_rng(1))
    s2 = models.low_level_actions(obs, ids, greedy=False, rng=np.random.default_rng(1))
    for a in (greedy, s1):
        assert a.shape == (len(obs),) and a.dtype == np.int64
        assert a.min() >= 0 and a.max() < models.n_actions
    np.testing.assert_array_equal(s1, s2)  # same rng, same samples
    one = models.low_level_actions(obs[:1], [2], greedy=False, rng=None)
    assert one.shape == (1,) and one.dtype == np.int64
    # sampling follows the softmax: the empirical frequency matches its probabilities
    logits = models.low_level(torch.from_numpy(obs[:1]), models._goals[[0]])[0]
    probs = torch.softmax(logits.double(), -1).numpy()
    many = models.low_level_actions(
        np.repeat(obs[:1], 4000, 0), np.zeros(4000, int), greedy=False, rng=np.random.default_rng(2)
    )
    freq = np.bincount(many, minlength=models.n_actions) / 4000
    np.testing.assert_allclose(freq, probs, atol=0.04)
    with pytest.raises(ValueError, match="goal ids"):
        models.low_level_actions(obs[:1], [models.n_goals], greedy=True, rng=None)


def test_learned_encoder_embeds_alike_states_alike():
    from rl_bk.knowledge.trajectory import Chunk
    from rl_bk.methods.ptgm.pretraining.embeddings import learned_embeddings

    rng = np.random.default_rng(0)
    # Two kinds of states, far apart in observation space, with a little noise.
    a, b = np.zeros(20, np.float32), np.zeros(20, np.float32)
    a[:10], b[10:] = 1.0, 1.0
    obs = np.stack([(a if i % 2 else b) + 0.05 * rng.standard_normal(20) for i in range(41)])
    ep = Chunk(
        observations=obs.astype(np.float32),
        captions=[""] * 41,
        actions=np.zeros(40, np.int64),
        rewards=np.zeros(40, np.float32),
    )
    (codes,) = learned_embeddings([ep], dim=4, epochs=20, seed=0)
    assert codes.shape == (41, 4)
    np.testing.assert_allclose(np.linalg.norm(codes, axis=1), 1.0, atol=1e-5)
    same = codes[1] @ codes[3]  # both like a
    other = codes[1] @ codes[2]  # a against b
    assert same > 0.9 and other < same - 0.5
    (again,) = learned_embeddings([ep], dim=4, epochs=20, seed=0)
    np.testing.assert_array_equal(codes, again)  # deterministic for a seed


def test_a_prior_that_sees_the_code_names_the_current_state_s_code_and_reads_it(tmp_path):
    report = build_toy(tmp_path, prior_sees_code=True, prior_epochs=40)
    head = report["prior"]["code_head"]
    # In the toy the caption (hence the code) is a function of the observation.
    assert report["prior"]["sees_code"] and head["held_out_accuracy"] >= 0.95
    models = PTGMModels.load(tmp_path / "m")
    prior = models.prior
    assert prior.config["sees_code"] and prior.net[0].in_features == 3 + models.n_goals
    obs = torch.from_numpy(np.vstack([np.ones((1, 3)), np.eye(3)]).astype(np.float32))
    codes = prior.code_logits(obs).argmax(-1).tolist()
    captions = [models.codebook.captions[c] for c in codes]
    assert captions == ["start", "did 0", "did 1", "did 2"]
    # The prior's logits depend on the code head's answer, not only on the observation.
    before = models.prior_logits(obs)
    with torch.no_grad():
        prior.code_head[-1].bias.add_(torch.tensor([50.0, 0, 0, 0]))
    assert not torch.allclose(before, models.prior_logits(obs))


def test_a_prior_without_the_code_has_no_code_head(tmp_path):
    build_toy(tmp_path)
    prior = PTGMModels.load(tmp_path / "m").prior
    assert prior.code_head is None and not prior.config["sees_code"]
    with pytest.raises(ValueError, match="sees_code"):
        prior.code_logits(torch.ones(1, 3))
