"""Every setting of a method's section reaches the object that uses it: a value given in the
task file (or swept) is the value the running part reads, with nothing copied by hand in
between. ONI's and ELLM's sections, which their configs take whole."""

import gymnasium as gym
import numpy as np
import pytest

from rl_bk.algorithms.ellm_ppo.settings import ELLMSettings
from rl_bk.algorithms.oni_ppo.settings import ONISettings
from rl_bk.connectors.learner.reward_rewrite import RewriteRewards
from rl_bk.experiments.methods import get_method
from rl_bk.experiments.task_config import load_task

OBS = gym.spaces.Box(-1.0, 1.0, (4,), np.float32)
ACTIONS = gym.spaces.Discrete(3)


def changed_value(name: str, default):
    """A valid value other than the default, for each kind of field."""
    if isinstance(default, bool):
        return not default
    if isinstance(default, str):
        return default + " (changed)"
    if name == "motif_quantile":
        return 0.25
    if name in ("label_busy_fraction", "ranking_quantile"):
        return 0.5 if default != 0.5 else 0.25
    return (default or 0) + 1


@pytest.mark.parametrize("field", sorted(ONISettings.model_fields))
def test_every_oni_setting_reaches_the_reward_it_shapes(field):
    task = load_task("nethack-score")
    value = changed_value(field, getattr(task.oni, field))
    task = task.model_copy(update={"oni": task.oni.updated({field: value})})
    config = get_method("oni-cosine-bow").build(task, 0, {})
    assert getattr(config.oni, field) == value
    pipeline = config.build_learner_connector(OBS, ACTIONS)
    rewrite = next(c for c in pipeline.connectors if isinstance(c, RewriteRewards))
    reward_fn = rewrite.terms[0].reward_fn
    assert getattr(reward_fn.settings, field) == value
    assert rewrite.extrinsic_coeff == task.oni.extrinsic_coeff


def test_a_swept_value_replaces_the_files_and_is_checked_as_it_would_be():
    task = load_task("nethack-score")
    config = get_method("oni-cosine-bow").build(task, 0, {"llm_coeff": 0.1})
    assert config.oni.llm_coeff == 0.1 and config.oni.beta == task.oni.beta
    with pytest.raises(ValueError, match="llm_coeff"):
        get_method("oni-cosine-bow").build(task, 0, {"llm_coeff": -1.0})


@pytest.mark.parametrize("field", sorted(set(ELLMSettings.model_fields) - {"goal_conditioned"}))
def test_every_ellm_setting_reaches_the_reward_it_shapes(field):
    task = load_task("crafter-text-ellm")
    value = changed_value(field, getattr(task.ellm, field))
    if field == "threshold":
        value = 0.7
    task = task.model_copy(update={"ellm": task.ellm.updated({field: value})})
    config = get_method("ellm-novelty").build(task, 0, {})
    assert getattr(config.ellm, field) == value
    pipeline = config.build_learner_connector(OBS, ACTIONS)
    rewrite = next(c for c in pipeline.connectors if isinstance(c, RewriteRewards))
    assert getattr(rewrite.terms[0].reward_fn.settings, field) == value
    assert rewrite.extrinsic_coeff == task.ellm.extrinsic_coeff


def test_ellm_goal_conditioning_reaches_the_env_it_wraps():
    task = load_task("crafter-text-ellm")
    task = task.model_copy(update={"ellm": task.ellm.updated({"goal_conditioned": True})})
    conditioned = get_method("ellm").build(task, 0, {"backend": "oracle"})
    plain = get_method("ellm").build(
        task.model_copy(update={"ellm": task.ellm.updated({"goal_conditioned": False})}),
        0,
        {"backend": "oracle"},
    )
    assert conditioned.env != plain.env == task.env
