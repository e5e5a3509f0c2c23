"""A task file's APPO settings reach RLlib's config, with rl-bk's APPO learner."""

from __future__ import annotations

from rl_bk.experiments.task_config import load_task
from rl_bk.methods.registry import get_method


def _appo_task(**env_runners):
    task = load_task("babyai-gotolocal-redball-s20")
    runners = task.env_runners.model_copy(update=env_runners)
    return task.model_copy(update={"algorithm": "appo", "env_runners": runners})


def test_rlbk_appo_waits_where_rllib_polls_and_keeps_rllibs_one_request_in_flight():
    from rl_bk.algorithms.appo import BaseAPPOTorchLearner

    task = _appo_task()
    config = get_method("ppo").build(task, 0, {})
    assert issubclass(config.learner_class, BaseAPPOTorchLearner)
    assert config.timeout_s_sampler_manager == task.appo.timeout_s_sampler_manager == 0.05
    assert config.max_requests_in_flight_per_env_runner == 1


def test_sample_requests_in_flight_per_runner_is_a_task_setting():
    config = get_method("ppo").build(_appo_task(max_requests_in_flight_per_env_runner=2), 0, {})
    assert config.max_requests_in_flight_per_env_runner == 2
