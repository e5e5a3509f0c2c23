"""collect_episodes with uniform random actions, on a BabyAI-Text env, through the dataset."""

import numpy as np
import pyarrow.parquet as pq

from rl_bk.knowledge.collect import collect_episodes
from rl_bk.knowledge.dataset import COLUMNS, read_episodes, write_episodes

ENV = "BabyAI-Text-GoToLocal-RedBall-S20-v0"


def test_random_episodes_are_whole_and_captioned():
    episodes = collect_episodes(None, ENV, {}, num_episodes=2, seed=0)
    assert len(episodes) == 2
    for ep in episodes:
        assert len(ep) > 0 and ep.observations.shape == (len(ep) + 1, 178)
        assert ep.terminated or ep.truncated
        assert all(ep.captions) and "red ball" in ep.mission
        assert set(np.unique(ep.actions)) <= set(range(7))


def test_a_seed_gives_the_same_episodes():
    a = collect_episodes(None, ENV, {}, num_episodes=1, seed=3)[0]
    b = collect_episodes(None, ENV, {}, num_episodes=1, seed=3)[0]
    np.testing.assert_array_equal(a.actions, b.actions)
    np.testing.assert_array_equal(a.observations, b.observations)


def test_written_and_read_back(tmp_path):
    episodes = collect_episodes(None, ENV, {}, num_episodes=2, seed=1)
    path = write_episodes(tmp_path, episodes, {"env": ENV, "collector": "random"})
    assert tuple(pq.read_schema(path).names) == COLUMNS
    back = read_episodes(tmp_path)
    assert [len(e) for e in back] == [len(e) for e in episodes]
    assert back[0].captions == episodes[0].captions
    np.testing.assert_array_equal(back[1].actions, episodes[1].actions)
    np.testing.assert_allclose(back[1].observations, episodes[1].observations)


def test_the_babyai_bot_solves_its_episodes_and_epsilon_adds_random_steps():
    import pytest

    from rl_bk.knowledge.collect import collect_bot_episodes

    expert = collect_bot_episodes(ENV, {}, 3, seed=0)
    assert all(ep.rewards.sum() > 0 and ep.terminated for ep in expert)  # the bot succeeds
    noisy = collect_bot_episodes(ENV, {}, 3, seed=0, epsilon=1.0)  # every step random
    assert [len(e) for e in noisy] != [len(e) for e in expert]
    with pytest.raises(ValueError, match="BabyAI levels"):
        collect_bot_episodes("Crafter-Text-v0", {}, 1, seed=0)
    with pytest.raises(ValueError, match="epsilon"):
        collect_bot_episodes(ENV, {}, 1, seed=0, epsilon=1.5)
