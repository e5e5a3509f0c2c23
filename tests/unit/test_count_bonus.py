"""The count-bonus method's reward on hand-made episode chunks, checked by hand (no Ray):
``coeff / sqrt(N(caption))``, N counted per caption string over the whole run (across
episodes and train batches), and the rewrite ``extrinsic_coeff * r + bonus`` before GAE."""

import gymnasium as gym
import numpy as np
import pytest
from pydantic import ValidationError
from ray.rllib.connectors.learner import AddOneTsToEpisodesAndTruncate
from ray.rllib.env.single_agent_episode import SingleAgentEpisode
from ray.rllib.utils.metrics.metrics_logger import MetricsLogger

from rl_bk.connectors.learner.episode_chunks import EpisodeChunk
from rl_bk.connectors.learner.intrinsic_rewards import IntrinsicReward
from rl_bk.connectors.learner.reward_rewrite import RewriteRewards
from rl_bk.experiments.sweep import check_sweep_values
from rl_bk.experiments.task_config import TaskConfigError, load_task
from rl_bk.methods.count_bonus.intrinsic_reward import CaptionCountBonus
from rl_bk.methods.count_bonus.settings import CountBonusSettings
from rl_bk.methods.registry import get_method

WALL, BALL, KEY = "You see a wall.", "You see a red ball.", "You see a purple key."


def episode(captions, rewards=None, ends=False):
    """Steps between len(captions) states; captions[0] is the state before the first step."""
    n = len(captions) - 1
    return SingleAgentEpisode(
        observations=[np.zeros(1, np.float32)] * (n + 1),
        infos=[{"caption": c} for c in captions],
        actions=[0] * n,
        rewards=rewards or [0.0] * n,
        terminated=ends,
        len_lookback_buffer=0,
    )


def chunk(captions, episode_id="e1", ends=False):
    return EpisodeChunk(episode(captions, ends=ends), len(captions) - 1, episode_id)


def test_each_step_earns_coeff_over_the_root_of_its_captions_count_so_far():
    bonus = CaptionCountBonus(CountBonusSettings(coeff=0.5))
    # The caption before the first step (KEY) is not a step's: it is not counted.
    (r,) = bonus([chunk([KEY, WALL, WALL, BALL, WALL, WALL])], None)
    # WALL: N = 1, 2, 3, 4; BALL: N = 1
    np.testing.assert_allclose(r, [0.5, 0.5 / np.sqrt(2), 0.5, 0.5 / np.sqrt(3), 0.25])
    assert bonus.counts == {WALL: 4, BALL: 1}


def test_counts_run_on_across_episodes_and_train_batches():
    bonus = CaptionCountBonus(CountBonusSettings(coeff=1.0))
    (a, b) = bonus([chunk(["", WALL], "e1", ends=True), chunk(["", WALL, BALL], "e2")], None)
    np.testing.assert_allclose(a, [1.0])
    np.testing.assert_allclose(b, [1 / np.sqrt(2), 1.0])  # another episode: WALL's N = 2
    # The next train batch, a new episode: nothing restarts (unlike ONI's per-episode count).
    (c,) = bonus([chunk([BALL, WALL, BALL], "e3")], None)
    np.testing.assert_allclose(c, [1 / np.sqrt(3), 1 / np.sqrt(2)])
    assert bonus.metrics() == {"captions_seen": 2.0, "new_caption_fraction": pytest.approx(2 / 5)}


def test_a_missing_caption_counts_as_the_empty_caption_and_coeff_zero_pays_nothing():
    bonus = CaptionCountBonus(CountBonusSettings(coeff=0.0))
    (r,) = bonus([chunk(["", WALL, ""])], None)
    np.testing.assert_array_equal(r, [0.0, 0.0])
    (r,) = CaptionCountBonus()([EpisodeChunk(episode(["x", "y"]), 1, "e")], None)
    np.testing.assert_allclose(r, [0.1])  # the default coeff


def test_coeff_must_not_be_negative():
    with pytest.raises(ValidationError, match="greater than or equal to 0"):
        CountBonusSettings(coeff=-0.1)


def test_the_rewrite_adds_the_bonus_to_the_scaled_env_reward_before_gae():
    ep = episode([KEY, WALL, BALL, WALL], rewards=[0.0, 1.0, 0.0], ends=True).to_numpy()
    shared, logger = {}, MetricsLogger()
    AddOneTsToEpisodesAndTruncate()(rl_module=None, batch={}, episodes=[ep], shared_data=shared)
    term = IntrinsicReward(CaptionCountBonus(CountBonusSettings(coeff=0.2)))
    RewriteRewards(terms=[term], extrinsic_coeff=10.0)(
        rl_module=None, batch={}, episodes=[ep], shared_data=shared, metrics=logger
    )
    # 10 x the env reward plus 0.2, 0.2, 0.2 / sqrt(2); PPO's artificial last step stays 0.
    np.testing.assert_allclose(ep.get_rewards(), [0.2, 10.2, 0.2 / np.sqrt(2), 0.0])
    assert logger.peek("intrinsic_reward_mean") == pytest.approx((0.4 + 0.2 / np.sqrt(2)) / 3)
    assert logger.peek("intrinsic/captions_seen") == 2.0


def test_the_task_files_and_a_swept_coeff_reach_the_reward_and_a_negative_one_is_refused():
    task = load_task("babyai-gotolocal-redball-s20", smoke=True)
    task = task.model_copy(update={"count_bonus": CountBonusSettings(coeff=0.3)})
    method = get_method("count-bonus")
    for params, coeff in (({}, 0.3), ({"coeff": 0.05}, 0.05)):  # the file's, then a sweep's
        config = method.build(task, 0, params)
        assert config.count_bonus.coeff == coeff
        pipeline = config.build_learner_connector(
            gym.spaces.Box(-1.0, 1.0, (4,), np.float32), gym.spaces.Discrete(3)
        )
        rewrite = next(c for c in pipeline.connectors if isinstance(c, RewriteRewards))
        assert rewrite.terms[0].reward_fn.settings.coeff == coeff
        assert rewrite.extrinsic_coeff == task.ppo.extrinsic_coeff
    with pytest.raises(TaskConfigError, match=r"sweep.count-bonus.coeff: -0.2 is not a valid"):
        check_sweep_values(task, "count-bonus", method.settings, {"coeff": [0.05, -0.2]})
