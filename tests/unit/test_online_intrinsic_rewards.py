"""ONI's and ELLM's per-batch rewards on hand-made episode pieces, checked by hand (no Ray):
count decay across train batches, the label table, the classifier's threshold, the ranking
normalisation and its quantile threshold, and the connector that adds them to the rewards."""

import numpy as np
import pytest
from ray.rllib.connectors.learner import AddOneTsToEpisodesAndTruncate
from ray.rllib.env.single_agent_episode import SingleAgentEpisode
from ray.rllib.utils.metrics.metrics_logger import MetricsLogger

from rl_bk.connectors.learner.episode_chunks import EpisodeChunk
from rl_bk.connectors.learner.intrinsic_rewards import IntrinsicReward
from rl_bk.connectors.learner.reward_rewrite import RewriteRewards
from rl_bk.labeling.config import LabelerConfig
from rl_bk.labeling.labeler import LabelerSpec
from rl_bk.labeling.queue import AsyncLabelQueue
from rl_bk.methods.ellm.goal_matching import GoalMatcher
from rl_bk.methods.ellm.intrinsic_reward import ELLMIntrinsicReward
from rl_bk.methods.oni.caption_models.ranking import preference_target
from rl_bk.methods.oni.intrinsic_reward import OnlineIntrinsicReward
from rl_bk.methods.oni.rl_module import ONI_MODULE_ID

NEWT, WALL, GOLD = "You kill the newt!", "It's a wall.", "You see here 5 gold pieces."


def piece(captions, episode_id="e1", ends=False, key="message", achieved=None):
    """Steps between len(captions) states; captions[0] is the state before the first step."""
    infos = [
        {key: c, "caption": c, "achieved": (achieved or {}).get(i, [])}
        for i, c in enumerate(captions)
    ]
    n = len(captions) - 1
    episode = SingleAgentEpisode(
        observations=[np.zeros(1, np.float32)] * (n + 1),
        infos=infos,
        actions=[0] * n,
        rewards=[0.0] * n,
        terminated=ends,
        len_lookback_buffer=0,
    )
    return EpisodeChunk(episode, n, episode_id)


def idle_queue(labels):
    """A queue whose labels are known up front and whose worker never runs."""
    q = AsyncLabelQueue(lambda: None, "helpful", lambda c: c, start=False)
    q.add(labels)
    return q


def oni(reward_type, **kwargs):
    kwargs = {"labeler": LabelerSpec(), "beta": 3.0, **kwargs}
    return OnlineIntrinsicReward(
        reward_type=reward_type, caption_key="message", llm_coeff=0.4, **kwargs
    )


def test_retrieval_with_count_decay_carried_across_batches_and_forgotten_at_the_end():
    reward = oni("retrieval")
    reward._queue = idle_queue({NEWT: 1.0, WALL: 0.0})
    (r,) = reward([piece(["", NEWT, NEWT, WALL, GOLD])], None)
    # N = 1, 2 for the newt: 0.4 and 0.4 / 2**3; a wall is not helpful; gold has no label yet
    np.testing.assert_allclose(r, [0.4, 0.05, 0.0, 0.0])
    assert reward.queue.pending == 1  # the gold message was queued, nobody waited for it
    # The same episode in the next batch: the third newt pays 0.4 / 27, then it ends.
    (r,) = reward([piece([GOLD, NEWT], ends=True)], None)
    np.testing.assert_allclose(r, [0.4 / 27])
    (r,) = reward([piece(["", NEWT])], None)  # a new episode with the same id: N = 1 again
    np.testing.assert_allclose(r, [0.4])
    m = reward.metrics()
    assert m["captions_annotated_fraction"] == pytest.approx(2 / 3)  # newt, wall of 3 seen
    assert m["steps_labelled_fraction"] == pytest.approx(5 / 6)  # gold twice, unlabelled


def test_the_envs_own_message_count_is_n_where_it_reports_one():
    # NetHack reports message_count (ONI's msg_count): N is the env's, exact whatever the
    # learner saw of the episode (here the episode's first newt was in an earlier batch).
    reward = oni("retrieval")
    reward._queue = idle_queue({NEWT: 1.0})
    steps = piece(["", NEWT, NEWT])
    steps.infos[1]["message_count"], steps.infos[2]["message_count"] = 2, 3
    (r,) = reward([steps], None)
    np.testing.assert_allclose(r, [0.4 / 8, 0.4 / 27])


def test_a_message_count_of_zero_on_a_step_without_a_message_pays_zero_not_nan():
    reward = oni("retrieval")
    reward._queue = idle_queue({NEWT: 1.0})
    steps = piece(["", NEWT, ""])
    steps.infos[1]["message_count"], steps.infos[2]["message_count"] = 1, 0
    (r,) = reward([steps], None)
    np.testing.assert_array_equal(r, [0.4, 0.0])


class StubModel:
    """The learner-only module as the reward sees it: fixed scores, a count of examples."""

    def __init__(self, scores, num_examples=100):
        self.scores, self.num_examples, self.examples = scores, num_examples, {}

    def unwrapped(self):
        return self

    def score(self, captions):
        return np.array([self.scores[c] for c in captions])

    def add_examples(self, labels):
        self.examples.update(labels)

    def ready(self, min_examples):
        return self.num_examples >= min_examples


def test_classification_pays_one_above_the_threshold_and_nothing_before_min_examples():
    reward = oni("classification", classification_threshold=0.5, min_examples=10, beta=0.0)
    reward._queue = idle_queue({})
    model = StubModel({NEWT: 0.7, WALL: 0.4, GOLD: 0.5})
    (r,) = reward([piece(["", NEWT, WALL, GOLD])], {ONI_MODULE_ID: model})
    np.testing.assert_allclose(r, [0.4, 0.0, 0.0])  # 0.5 is not above 0.5
    model.num_examples = 9
    (r,) = reward([piece(["", NEWT])], {ONI_MODULE_ID: model})
    np.testing.assert_allclose(r, [0.0])


def test_labels_that_arrived_reach_the_online_model():
    reward = oni("classification")
    q = AsyncLabelQueue(lambda: None, "helpful", lambda c: c, start=False)
    reward._queue = q
    q._new = {NEWT: 1.0}  # as the worker leaves a label it received
    model = StubModel({NEWT: 0.9}, num_examples=0)
    reward([piece(["", NEWT])], {ONI_MODULE_ID: model})
    assert model.examples == {NEWT: 1.0}


def test_ranking_is_normalised_by_running_stats_and_thresholded():
    # Raw rewards 1, 1.7, 3, 2.3: mean 2, std sqrt(0.545) = 0.7382; normalised -1.3546,
    # -0.4064, 1.3546, 0.4064. ONI's threshold -0.5 keeps the second (negative) one.
    scores = {"a": 1.0, "b": 1.7, "c": 3.0, "d": 2.3}
    z = (np.array([1.0, 1.7, 3.0, 2.3]) - 2.0) / np.sqrt(0.545)
    reward = oni("ranking", ranking_threshold=-0.5, beta=0.0, min_examples=0)
    reward._queue = idle_queue({})
    (r,) = reward([piece(["", "a", "b", "c", "d"])], {ONI_MODULE_ID: StubModel(scores)})
    np.testing.assert_allclose(r, 0.4 * np.array([0.0, z[1], z[2], z[3]]), atol=1e-9)
    # With the median as a quantile threshold (0 here), the negative one goes too.
    reward = oni("ranking", ranking_quantile=0.5, beta=0.0, min_examples=0)
    reward._queue = idle_queue({})
    (r,) = reward([piece(["", "a", "b", "c", "d"])], {ONI_MODULE_ID: StubModel(scores)})
    np.testing.assert_allclose(r, 0.4 * np.array([0.0, 0.0, z[2], z[3]]), atol=1e-9)


def test_ranking_normalises_over_the_batchs_steps_so_a_repeated_caption_weighs_more():
    # Steps a, a, b with raw 1, 1, 4: mean 2, std sqrt(2) over the steps (over the distinct
    # captions it would be 2.5 and 1.5). Threshold -10 keeps every reward, beta 0 no decay.
    reward = oni("ranking", ranking_threshold=-10.0, beta=0.0, min_examples=0)
    reward._queue = idle_queue({})
    (r,) = reward([piece(["", "a", "a", "b"])], {ONI_MODULE_ID: StubModel({"a": 1.0, "b": 4.0})})
    np.testing.assert_allclose(r, 0.4 * np.array([-1.0, -1.0, 2.0]) / np.sqrt(2.0))


def test_motif_thresholds_at_a_quantile_of_its_dataset():
    from rl_bk.methods.oni.motif import MotifModel, weighted_quantiles

    # The dataset: normalised rewards -1 (3 steps), 0 (1 step), 2 (1 step): its median is -1,
    # its 0.8 quantile 0 (4 of 5 steps at or below).
    table = weighted_quantiles(np.array([0.0, -1.0, 2.0]), np.array([1, 3, 1]))
    assert (table["0.50"], table["0.80"], table["0.95"]) == (-1.0, 0.0, 2.0)

    class Fixed(MotifModel):
        def score(self, captions):
            return np.array([{"a": -1.0, "b": 0.5, "c": 2.0}[c] for c in captions])

    reward = oni("motif", motif_dir="unused", motif_quantile=0.8, beta=0.0)
    reward._motif = Fixed(_Net(), 0.0, 1.0, table)  # as load_motif_model gives it
    (r,) = reward([piece(["", "a", "b", "c"])], None)
    np.testing.assert_allclose(r, 0.4 * np.array([0.0, 0.5, 2.0]))  # above 0, the 0.8 quantile
    # With the dataset's mean 1 and std 2, the scores normalise to -1, -0.25 and 0.5.
    reward._motif = Fixed(_Net(), 1.0, 2.0, table)
    (r,) = reward([piece(["", "a", "b", "c"], episode_id="e2")], None)
    np.testing.assert_allclose(r, 0.4 * np.array([0.0, 0.0, 0.5]))
    with pytest.raises(ValueError, match=r"no 0\.33 quantile"):
        reward._motif.threshold_at(0.33)


class _Net:
    def eval(self):
        return self


def test_ranking_queues_random_pairs_of_captions_seen_while_few_wait():
    reward = oni("ranking", pairs_per_batch=3, label_batch_size=2, min_examples=0)
    reward._queue = idle_queue({})
    reward(
        [piece(["", NEWT, WALL, GOLD])],
        {ONI_MODULE_ID: StubModel({NEWT: 0.0, WALL: 0.0, GOLD: 0.0})},
    )
    pairs = list(reward.queue._pending)
    assert 1 <= len(pairs) <= 3 and all(a != b and {a, b} <= {NEWT, WALL, GOLD} for a, b in pairs)
    assert [preference_target(c) for c in ("A", "B", "tie")] == [0.0, 1.0, 0.5]


def test_cosine_bow_and_none():
    class Stub:
        def encode(self, texts):
            table = {"kill monsters": [1.0, 0.0], NEWT: [0.8, 0.6], WALL: [0.0, 1.0]}
            return np.array([table[t] for t in texts])

    from rl_bk.methods.oni.caption_models.cosine_bow import CosineBoWReward

    reward = oni("cosine-bow", goal="kill monsters", beta=0.0)
    reward._bow = CosineBoWReward("kill monsters", 0.5, embedder=Stub())
    (r,) = reward([piece(["", NEWT, WALL])], None)
    np.testing.assert_allclose(r, [0.4 * 0.8, 0.0])
    (r,) = oni("none")([piece(["", NEWT, WALL])], None)
    np.testing.assert_allclose(r, [0.0, 0.0])


def test_unknown_reward_type_and_missing_settings_say_what_to_do():
    with pytest.raises(ValueError, match="valid: none, retrieval"):
        OnlineIntrinsicReward(reward_type="magic")
    with pytest.raises(ValueError, match="needs a labeler"):
        OnlineIntrinsicReward(reward_type="retrieval")
    with pytest.raises(ValueError, match="knowledge build --kinds motif"):
        OnlineIntrinsicReward(reward_type="motif")


def test_only_a_labeler_computing_on_this_machine_is_held_to_the_busy_fraction():
    def busy(spec):
        fn = OnlineIntrinsicReward(reward_type="retrieval", labeler=spec, label_busy_fraction=0.3)
        return fn.label_busy_fraction

    assert busy(LabelerSpec(LabelerConfig(backend="llamacpp"))) == 0.3
    assert busy(LabelerSpec(LabelerConfig(backend="llamacpp"), url="http://gpu-node:8000")) == 1.0
    openai = LabelerConfig(backend="openai", base_url="http://gpu-node:8000/v1")
    assert busy(LabelerSpec(openai)) == 1.0
    assert busy(LabelerSpec(LabelerConfig(backend="oracle"))) == 1.0


# --------------------------------------------------------------------------------- ELLM
class TableEmbedder:
    def encode(self, texts):
        vocab = ["collect wood", "place stone", "eat cow"]
        return np.array([np.eye(3)[vocab.index(t)] for t in texts], np.float32)


def test_ellm_pays_matches_with_the_previous_states_suggestions_once_per_episode():
    reward = ELLMIntrinsicReward(
        suggester="llm",
        labeler=LabelerSpec(),
        family="crafter",
        ellm_coeff=2.0,
        label_timeout_s=0.0,
    )
    reward.matcher = GoalMatcher(embedder=TableEmbedder(), threshold=0.9)
    q = AsyncLabelQueue(lambda: None, "goals", lambda k: k, start=False)
    q.add(
        {("tree near", None): ["collect wood", "eat cow"], ("tree again", None): ["collect wood"]}
    )
    reward._queue = q
    steps = piece(
        ["tree near", "tree again", "tree gone", "cow"],
        key="caption",
        achieved={1: ["collect wood"], 2: ["collect wood"], 3: ["eat cow"]},
    )
    (r,) = reward([steps], None)
    # step 0: suggested for "tree near", achieved collect wood: 2 * 1.0; step 1: achieved it
    # again, already achieved this episode: 0; step 2: "tree gone" has no label (asked, not
    # waited for with timeout 0): 0.
    np.testing.assert_allclose(r, [2.0, 0.0, 0.0])
    assert ("tree gone", None) in q._pending  # only achieving states' captions are asked
    assert ("tree near", None) not in q._pending
    assert reward.metrics()["steps_without_suggestions"] == 1


def test_ellm_asks_the_labeler_only_about_states_a_step_achieved_something_from():
    reward = ELLMIntrinsicReward(
        suggester="llm", labeler=LabelerSpec(), family="crafter", label_timeout_s=0.0
    )
    reward.matcher = GoalMatcher(embedder=TableEmbedder(), threshold=0.9)
    q = AsyncLabelQueue(lambda: None, "goals", lambda k: k, start=False)
    reward._queue = q
    steps = piece(["grass", "tree", "stump"], key="caption", achieved={2: ["collect wood"]})
    (r,) = reward([steps], None)
    np.testing.assert_allclose(r, [0.0, 0.0])  # asked, not waited for: nothing paid yet
    assert ("tree", None) in q._pending  # the step from "tree" collected wood
    assert ("grass", None) not in q._pending  # the step from "grass" achieved nothing


def test_ellm_novelty_pays_every_first_achievement_of_an_episode():
    reward = ELLMIntrinsicReward(suggester="novelty", family="crafter")
    reward.matcher = GoalMatcher(embedder=TableEmbedder(), threshold=0.9)
    reward._all_goals = ["collect wood", "place stone", "eat cow"]
    steps = piece(
        ["a", "b", "c", "d"],
        key="caption",
        achieved={1: ["collect wood"], 2: ["collect wood"], 3: ["place stone"]},
    )
    (r,) = reward([steps], None)
    np.testing.assert_allclose(r, [1.0, 0.0, 1.0])


# ---------------------------------------------------------------------------- connector
def test_the_connector_adds_the_bonus_to_scaled_rewards_and_leaves_the_artificial_step():
    ep = SingleAgentEpisode(
        observations=[np.float32(0)] * 4,
        actions=[0] * 3,
        rewards=[0.0, 1.0, 0.0],
        infos=[{"message": m} for m in ["", NEWT, WALL, NEWT]],
        terminated=True,
        len_lookback_buffer=0,
    ).to_numpy()

    class Fixed:
        def __call__(self, pieces, rl_module):
            assert [len(p) for p in pieces] == [3] and pieces[0].terminated
            return [np.array([0.5, 0.0, 0.25])]

        def metrics(self):
            return {"labels_pending": 3.0}

    shared, logger = {}, MetricsLogger()
    AddOneTsToEpisodesAndTruncate()(rl_module=None, batch={}, episodes=[ep], shared_data=shared)
    RewriteRewards(terms=[IntrinsicReward(Fixed())], extrinsic_coeff=10.0)(
        rl_module=None, batch={}, episodes=[ep], shared_data=shared, metrics=logger
    )
    np.testing.assert_allclose(ep.get_rewards(), [0.5, 10.0, 0.25, 0.0])
    assert logger.peek("intrinsic_reward_mean") == pytest.approx(0.25)
    assert logger.peek("intrinsic_return_mean") == pytest.approx(0.75)  # per chunk
    assert logger.peek("intrinsic/labels_pending") == 3.0


def test_the_online_model_scores_with_the_last_published_fit_and_holds_labels_out():
    import gymnasium as gym
    import torch
    from ray.rllib.core.rl_module.rl_module import RLModuleSpec

    from rl_bk.methods.oni.rl_module import OnlineRewardModel

    torch.manual_seed(0)
    model = RLModuleSpec(
        module_class=OnlineRewardModel,
        learner_only=True,
        model_config={"kind": "classification"},
        observation_space=gym.spaces.Box(-1, 1, (2,)),
        action_space=gym.spaces.Discrete(2),
    ).build()
    labels = {f"message {i}": float(i % 2) for i in range(40)}
    model.add_examples(labels)
    assert model.num_examples + len(model.held_out) == 40 and 0 < len(model.held_out) < 10
    assert not model.ready(min_examples=1)  # nothing fitted and published yet
    before = model.score([NEWT])
    with torch.no_grad():
        for p in model.net.parameters():
            p.add_(1.0)  # a fit moves the trained copy...
    np.testing.assert_array_equal(model.score([NEWT]), before)  # ...not what rewards read
    model.publish()
    assert model.ready(min_examples=1) and not model.ready(min_examples=100)
    assert model.score([NEWT])[0] != before[0]
