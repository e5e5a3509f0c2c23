"""ONI and ELLM inside a real PPO learner: the reward piece sits before GAE, the online
reward model is a learner-only module the learner fits, and training never waits for a slow
labeler (ONI)."""

import time

import numpy as np
import pytest
import torch

from rl_bk.experiments.task_config import load_task
from rl_bk.labeling.config import LabelerConfig
from rl_bk.labeling.labeler import LabelerSpec
from rl_bk.methods.oni import ONI_MODULE_ID
from rl_bk.methods.registry import get_method

pytestmark = pytest.mark.ray

# Every labeler call of the slow backend: far longer than three iterations take even on a
# loaded machine (beside a running study, 141 s); teardown does not wait for it.
DELAY_S = 600.0


def build(method, params, **oni):
    task = load_task("babyai-gotolocal-redball-s20", smoke=True)
    task = task.model_copy(update={"oni": task.oni.model_copy(update=oni)})
    config = get_method(method).build(task, 0, params).env_runners(num_env_runners=0)
    return config


def test_oni_training_never_waits_for_a_slow_labeler(ray_session):
    config = build("oni-retrieval", {"backend": "fake"})
    config.training(labeler=LabelerSpec(LabelerConfig(backend="fake", fake_delay_s=DELAY_S)))
    algo = config.build_algo()
    try:
        started = time.perf_counter()
        results = [algo.train() for _ in range(3)]
        elapsed = time.perf_counter() - started
        pipeline = algo.learner_group._learner._learner_connector
        names = [type(c).__name__ for c in pipeline.connectors]
    finally:
        algo.stop()
    # BK's tasks read a time limit as the episode's end first (TimeLimitAsTermination); the
    # rewrite comes right after PPO's extra step, before anything reads rewards.
    first = names.index("AddOneTsToEpisodesAndTruncate")
    assert names[first + 1] == "RewriteRewards" and first <= 1
    assert names[-2:] == ["GeneralAdvantageEstimation", "ShuffleTrainBatch"]
    last = results[-1]["learners"]
    # Three iterations in less time than one labeler call: nothing waited for a label.
    assert elapsed < DELAY_S
    assert last["intrinsic/labels_requested"] > 0 and last["intrinsic/labels_received"] == 0
    assert last["intrinsic/labels_pending"] > 0
    assert last["intrinsic_reward_mean"] == 0.0  # no label yet: nothing paid


@pytest.mark.parametrize("in_background", [True, False])
def test_oni_classification_fits_its_learner_only_model_on_oracle_labels(
    ray_session, in_background
):
    config = build(
        "oni-classification",
        {"backend": "oracle"},
        min_examples=4,
        label_batch_size=8,
        goal="go to the red ball",
    )
    config.training(reward_model_steps=4, reward_model_in_background=in_background)
    algo = config.build_algo()
    try:
        learner = algo.learner_group._learner
        assert ONI_MODULE_ID in learner.module.keys()
        assert (
            ONI_MODULE_ID not in algo.env_runner.module.keys()
            if hasattr(algo.env_runner.module, "keys")
            else True
        )
        # PPO's optimisers must not touch it: they would zero and step it under the fit.
        assert learner.get_optimizers_for_module(ONI_MODULE_ID) == []
        reward_params = {id(p) for p in learner.module[ONI_MODULE_ID].parameters()}
        assert not reward_params & {id(p) for p in learner._params.values()}
        deadline = time.perf_counter() + 120
        fitted = {}
        while time.perf_counter() < deadline and not fitted.get("gradient_steps"):
            fitted = algo.train()["learners"].get(ONI_MODULE_ID, {})
    finally:
        algo.stop()
    assert fitted["gradient_steps"] > 0 and fitted["examples"] > 0
    assert np.isfinite(fitted["loss"])
    # The published scorer holds the fitted weights.
    model = learner.module[ONI_MODULE_ID].unwrapped()
    for a, b in zip(model.scorer.parameters(), model.net.parameters()):
        assert torch.equal(a, b) or in_background  # a later fit may have moved on


def test_ellm_on_babyai_asks_the_oracle_for_the_achieving_states_and_pays(ray_session):
    config = build("ellm", {"backend": "oracle"})
    algo = config.build_algo()
    try:
        learners = [algo.train()["learners"] for _ in range(2)][-1]
    finally:
        algo.stop()
    # Every achieving state's suggestions came (the batch waits for them), and some matched.
    assert learners["intrinsic/steps_with_achievements"] > 0
    assert learners["intrinsic/steps_without_suggestions"] == 0
    assert learners["intrinsic/labels_received"] > 0
    assert learners["intrinsic/rewarded_steps"] > 0


def test_ellm_goal_conditioned_policy_sees_the_embedded_suggestions(ray_session):
    from rl_bk.methods.ellm.goal_observation import EMBEDDING_DIM, GoalObservation

    config = build("ellm", {"backend": "oracle", "goal_conditioned": True})
    algo = config.build_algo()
    try:
        algo.train()
        env = algo.env_runner.env.unwrapped.envs[0]
        while not isinstance(env, GoalObservation):
            env = env.env  # gymnasium's own wrappers sit outside ours
        obs_space = algo.env_runner.module.observation_space
    finally:
        algo.stop()
    plain = load_task("babyai-gotolocal-redball-s20")
    import env_registry

    base = env_registry.make_env(plain.env).observation_space.shape[0]
    assert obs_space.shape == (base + EMBEDDING_DIM,)
    assert env.queue.metrics()["labels_received"] > 0  # suggestions were asked and came


def test_an_isolated_labeler_answers_from_its_own_process(ray_session):
    from rl_bk.labeling.tasks import HelpfulLabel, HelpfulRequest

    labeler = LabelerSpec(LabelerConfig(backend="fake"), isolate=True).build()
    assert type(labeler).__name__ == "IsolatedLabeler"
    (label,) = labeler("helpful", [HelpfulRequest(caption="You kill the newt!", task="score")])
    assert isinstance(label, HelpfulLabel)
    # llamacpp is isolated by default once Ray is up; in-process labelers are not.
    assert type(LabelerSpec(LabelerConfig(backend="oracle")).build()).__name__ != "IsolatedLabeler"
