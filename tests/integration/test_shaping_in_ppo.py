"""The shaping piece inside a real PPO learner, through RLlib's own learner-connector hook."""

import numpy as np
import pytest

from rl_bk.connectors.learner.potential_shaping import SHAPING_REWARD_MEAN, PotentialBasedShaping
from rl_bk.experiments.methods import get_method
from rl_bk.experiments.task_config import load_task

pytestmark = pytest.mark.ray


def potential_grows_with_caption_length(chunks):
    # A stand-in source that reads captions, as LLM-derived potentials will.
    return [np.array([len(c) / 100.0 for c in chunk.captions]) for chunk in chunks]


def test_ppo_trains_with_shaped_rewards_and_logs_the_shaping(ray_session):
    task = load_task("babyai-gotolocal-redball-s20", smoke=True)
    config = get_method("ppo").build(task, 0, {}).env_runners(num_env_runners=0)
    config.learners(learner_connector=lambda obs_space, act_space: PotentialBasedShaping(
        potential_fn=potential_grows_with_caption_length, gamma=config.gamma, coeff=1.0))
    algo = config.build_algo()
    try:
        result = algo.train()
    finally:
        algo.stop()
    learners = result["learners"]
    assert "potential_based_shaping" in learners["__all_modules__"]["learner_connector"]["timers"][
        "connectors"]  # it ran inside PPO's learner pipeline  # fmt: skip
    shaping = learners[SHAPING_REWARD_MEAN]
    assert np.isfinite(shaping) and shaping != 0.0  # captions change, so potentials do
