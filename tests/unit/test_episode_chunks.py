"""Per-episode state in learner connectors survives train batches: one episode cut into two
chunks, each run through RLlib's own AddOneTsToEpisodesAndTruncate (which renames chunks
``<id>_<index>``) and then our piece, as two consecutive train batches (no Ray); and what the
one view of a chunk reads."""

from types import SimpleNamespace

import numpy as np
from ray.rllib.connectors.learner import AddOneTsToEpisodesAndTruncate
from ray.rllib.env.single_agent_episode import SingleAgentEpisode

from rl_bk.callbacks.env_slot import tag_env_slot
from rl_bk.connectors.learner.episode_chunks import (
    EpisodeChunk,
    Stream,
    by_env_slot,
    chunks_with_real_steps,
    in_episode_order,
)
from rl_bk.connectors.learner.intrinsic_rewards import IntrinsicReward
from rl_bk.connectors.learner.reward_rewrite import RewriteRewards
from rl_bk.connectors.learner.rllib_internals import episode_id_of
from rl_bk.methods.ellm.goal_matching import GoalMatcher
from rl_bk.methods.ellm.intrinsic_reward import ELLMIntrinsicReward


class OneHotEmbedder:
    """Equal texts have similarity 1, different texts 0."""

    def __init__(self):
        self.index: dict[str, int] = {}

    def encode(self, texts):
        ids = [self.index.setdefault(t, len(self.index)) for t in texts]
        out = np.zeros((len(texts), 512), np.float32)
        out[np.arange(len(texts)), ids] = 1.0
        return out


def add(ep, achieved, terminated=False):
    info = {"caption": "c", "achieved": achieved}
    ep.add_env_step(np.zeros(2, np.float32), 0, 0.0, infos=info, terminated=terminated)


def train_batch(piece, chunks):
    shared = {}
    AddOneTsToEpisodesAndTruncate()(rl_module=None, batch={}, episodes=chunks, shared_data=shared)
    piece(rl_module=None, batch={}, episodes=chunks, shared_data=shared)
    return np.asarray(chunks[-1].get_rewards())[:-1]  # without PPO's artificial step


def test_the_episode_id_is_the_same_in_every_chunk_after_rllib_renames_them():
    ep = SingleAgentEpisode(
        observations=[np.zeros(2, np.float32)], infos=[{}], len_lookback_buffer=0
    )
    add(ep, [])
    nxt = ep.cut()
    add(nxt, [])
    own_id = ep.id_
    ids = []
    for chunk in (ep.to_numpy(), nxt.to_numpy()):
        shared = {}
        AddOneTsToEpisodesAndTruncate()(
            rl_module=None, batch={}, episodes=[chunk], shared_data=shared
        )
        assert chunk.id_ == own_id + "_0"  # what RLlib 2.60 does to every chunk
        ids += [c.episode_id for c in chunks_with_real_steps(_Iter(), [chunk], shared)]
    assert ids == [own_id, own_id]
    assert episode_id_of(nxt, renamed=False) == nxt.id_


class _Iter(RewriteRewards):
    def __init__(self):
        pass


def test_ellm_pays_each_goal_once_per_episode_across_train_batches():
    reward = ELLMIntrinsicReward(suggester="novelty", family="crafter")
    reward.matcher = GoalMatcher(embedder=OneHotEmbedder())
    piece = RewriteRewards(terms=[IntrinsicReward(reward)], extrinsic_coeff=0.0)
    ep = SingleAgentEpisode(
        observations=[np.zeros(2, np.float32)],
        infos=[{"caption": "c", "achieved": []}],
        len_lookback_buffer=0,
    )
    add(ep, [])
    add(ep, ["collect wood"])
    nxt = ep.cut()
    add(nxt, ["collect wood"])  # the same goal again, in the next train batch
    add(nxt, ["place stone"])
    other = SingleAgentEpisode(
        observations=[np.zeros(2, np.float32)],
        infos=[{"caption": "c", "achieved": []}],
        len_lookback_buffer=0,
    )
    add(other, [])
    first = train_batch(piece, [ep.to_numpy()])  # renamed <id>_0
    second = train_batch(piece, [other.to_numpy(), nxt.to_numpy()])  # renamed <id>_1
    np.testing.assert_allclose(first, [0.0, 1.0])
    # Keyed by the chunk's renamed id, or forgetting the episode because RLlib marks every
    # unterminated chunk truncated, "collect wood" would pay again here.
    np.testing.assert_allclose(second, [0.0, 1.0])


def test_the_view_reads_real_steps_and_keeps_the_env_rewards_after_a_rewrite():
    ep = SingleAgentEpisode(
        observations=[np.zeros(2, np.float32)],
        infos=[{"caption": "a", "mission": "go"}],
        len_lookback_buffer=0,
    )
    for r in (1.0, 2.0):
        ep.add_env_step(np.full(2, r, np.float32), 1, r, infos={"caption": f"c{r}"})
    own_id, chunk = ep.id_, ep.to_numpy()
    shared = {}
    AddOneTsToEpisodesAndTruncate()(rl_module=None, batch={}, episodes=[chunk], shared_data=shared)
    (view,) = chunks_with_real_steps(_Iter(), [chunk], shared)
    assert len(view) == 2 and view.starts_episode and not view.ends_episode
    np.testing.assert_array_equal(view.rewards, [1.0, 2.0])
    view.set_rewards(np.array([5.0, 6.0]))
    np.testing.assert_array_equal(np.asarray(chunk.get_rewards()), [5.0, 6.0, 0.0])
    np.testing.assert_array_equal(view.rewards, [1.0, 2.0])  # what terms read: the env's
    data = view.as_chunk()
    assert data.captions == ["a", "c1.0", "c2.0"] and data.mission == "go"
    assert data.observations.shape == (3, 2) and list(data.actions) == [1, 1]
    assert data.episode_id == own_id


def test_an_episodes_chunks_are_put_in_time_order_whatever_the_batch_order():
    # Two chunks of one episode in one train batch (a runner sampled twice), the later one
    # first: state carried chunk to chunk (BK's last potential) must see the earlier first.
    ep = SingleAgentEpisode(
        observations=[np.zeros(2, np.float32)], infos=[{}], len_lookback_buffer=0
    )
    tag_env_slot(episode=ep, env_runner=SimpleNamespace(worker_index=1), env_index=3)
    add(ep, [])
    later = ep.cut()
    add(later, [])
    chunks = [EpisodeChunk(e, 1, ep.id_) for e in (later.to_numpy(), ep.to_numpy())]
    assert in_episode_order(chunks) == [1, 0]
    assert by_env_slot(chunks) == {Stream("slot", "1/3"): [1, 0]}
