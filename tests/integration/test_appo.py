"""Methods on APPO (``algorithm: appo``): the task's setup builds RLlib's APPO with the method's
reward rewrite in place, trains, and asks its labeler without waiting."""

import time

import pytest

from rl_bk.experiments.task_config import load_task
from rl_bk.labeling.config import LabelerConfig
from rl_bk.labeling.labeler import LabelerSpec
from rl_bk.methods.registry import get_method

pytestmark = pytest.mark.ray


def appo_task(name):
    task = load_task(name, smoke=True)
    runners = task.env_runners.model_copy(update={"num_env_runners": 1})
    return task.model_copy(update={"algorithm": "appo", "env_runners": runners})


def train(config, iterations):
    algo = config.build_algo()
    try:
        results = [algo.train() for _ in range(iterations)]
        pieces = [type(c).__name__ for c in algo.learner_group._learner._learner_connector]
        module = type(algo.learner_group._learner.module["default_policy"].unwrapped()).__name__
    finally:
        algo.stop()
    return results, pieces, module


def test_bk_ppo_baseline_on_appo_trains_with_bk_network_and_10x_reward(ray_session):
    task = appo_task("babyai-gotolocal-redball-s20")
    config = get_method("ppo").build(task, 0, {"extrinsic_coeff": 10.0})
    assert type(config).__name__ == "BaseAPPOConfig" and config.extrinsic_coeff == 10.0
    results, pieces, module = train(config, 2)
    assert module == "GridConvAPPOModule"
    assert pieces.index("RewriteRewards") == pieces.index("AddOneTsToEpisodesAndTruncate") + 1
    steps = results[-1]["env_runners"]["num_env_steps_sampled_lifetime"]
    assert steps >= 2 * task.ppo.train_batch_size_per_learner  # an iteration: one batch
    assert "policy_loss" in results[-1]["learners"]["default_policy"]


def test_appo_main_loop_and_learner_thread_wait_for_samples_instead_of_polling(ray_session):
    # RLlib's default (0 s) polls the runners without pause, thousands of training steps an
    # iteration on two cores, taking the CPU the learner thread and the runners need; and
    # RLlib's learner thread polls its empty buffer every 0.1 ms.
    task = appo_task("babyai-gotolocal-redball-s20")
    timeout = task.appo.timeout_s_sampler_manager
    config = get_method("ppo").build(task, 0, {})
    assert config.timeout_s_sampler_manager == timeout > 0
    algo = config.build_algo()
    try:
        learner = algo.learner_group._learner
        assert type(learner._learner_thread._in_queue).__name__ == "WaitingCircularBuffer"
        assert learner._learner_thread._in_queue is learner._learner_thread_in_queue
        algo.train()
        for _ in range(3):
            start = time.perf_counter()
            calls = algo.train()["num_training_step_calls_per_iteration"]
            wall = time.perf_counter() - start
            # a training step returns early only when the runner's samples are in (one or two
            # sample() calls an iteration); otherwise it waits the timeout out
            assert calls <= wall / timeout + 3, (calls, wall)
    finally:
        algo.stop()


def test_oni_retrieval_on_appo_asks_its_labeler_and_pays_nothing_unlabelled(ray_session):
    task = appo_task("babyai-gotolocal-redball-s20")
    config = get_method("oni-retrieval").build(task, 0, {"backend": "fake"})
    slow = LabelerSpec(LabelerConfig(backend="fake", fake_delay_s=600.0))
    config.training(labeler=slow)
    results, pieces, _ = train(config, 3)
    assert pieces.index("RewriteRewards") == pieces.index("AddOneTsToEpisodesAndTruncate") + 1
    # APPO's learner updates in its own thread: an iteration may end before an update has
    # logged, so read every iteration's values that are there (NaN: none yet).
    logged = [
        r["learners"]
        for r in results
        if r["learners"].get("intrinsic/labels_requested", float("nan")) > 0
    ]
    assert logged, "no update asked for labels"
    assert all(m["intrinsic/labels_received"] == 0 for m in logged)
    assert all(m["intrinsic_reward_mean"] == 0.0 for m in logged)


def test_oni_classification_on_appo_fits_its_reward_model_in_the_learner(ray_session):
    from rl_bk.methods.oni.rl_module import ONI_MODULE_ID

    task = appo_task("babyai-gotolocal-redball-s20")
    oni = task.oni.model_copy(
        update={"min_examples": 4, "label_batch_size": 8, "goal": "go to the red ball"}
    )
    config = get_method("oni-classification").build(
        task.model_copy(update={"oni": oni}), 0, {"backend": "oracle"}
    )
    config.training(reward_model_steps=4, reward_model_in_background=False)
    assert type(config).__name__ == "ONIAPPOConfig"
    algo = config.build_algo()
    try:
        learner = algo.learner_group._learner
        assert type(learner).__name__ == "ONIAPPOTorchLearner"
        # APPO's optimiser must not touch the reward model, nor its target-network logic.
        assert learner.get_optimizers_for_module(ONI_MODULE_ID) == []
        fitted = {}
        for _ in range(12):
            fitted = algo.train()["learners"].get(ONI_MODULE_ID, {}) or fitted
            if fitted.get("gradient_steps", 0) > 0:
                break
    finally:
        algo.stop()
    assert fitted.get("gradient_steps", 0) > 0, "the reward model was never fitted"


def test_a_method_without_an_appo_form_is_refused_before_anything_runs():
    from rl_bk.experiments.sweep import expand_variants

    task = appo_task("babyai-gotolocal-redball-s20")
    with pytest.raises(ValueError, match="rnd has no APPO form"):
        expand_variants(task, ["ppo", "rnd"])
    mixed = task.model_copy(update={"sweep": {"rnd": {"algorithm": ["ppo"]}}})
    assert [v.method for v in expand_variants(mixed, ["ppo", "rnd"])] == ["ppo", "rnd"]
