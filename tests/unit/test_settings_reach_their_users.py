"""Every setting of a method's section reaches the object that uses it: a value given in the
task file (or swept) is the value the running part reads, with nothing copied by hand in
between. ONI's, ELLM's and PTGM's sections and BK's shaping settings, which their configs take
whole."""

import gymnasium as gym
import numpy as np
import pytest

from rl_bk.connectors.learner.reward_rewrite import RewriteRewards
from rl_bk.experiments.task_config import load_task
from rl_bk.methods.bk.potential_shaping import PotentialShaping
from rl_bk.methods.bk.settings import ShapingSettings
from rl_bk.methods.ellm.settings import ELLMSettings
from rl_bk.methods.oni.settings import ONISettings
from rl_bk.methods.ptgm.settings import PTGMSettings
from rl_bk.methods.registry import get_method

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
    assert rewrite.extrinsic_coeff == task.ppo.extrinsic_coeff


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
    assert rewrite.extrinsic_coeff == task.ppo.extrinsic_coeff


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


SHAPING_CHANGES = {
    "shaping_coeff": 0.5,
    "potential_normalization": "std",
    "shaping_convention": "ng",
    "episode_start_window": "short",
}


def _what_the_shaping_term_reads(rewrite: RewriteRewards) -> dict:
    term = next(t for t in rewrite.terms if isinstance(t, PotentialShaping))
    return {
        "shaping_coeff": term.coeff,
        "potential_normalization": term.scale.normalization,
        "shaping_convention": term.convention,
        "episode_start_window": term.history.episode_start,
    }


@pytest.mark.parametrize("field", sorted(ShapingSettings.model_fields))
@pytest.mark.parametrize("how", ["task file", "sweep"])
def test_every_bk_shaping_setting_reaches_the_shaping_term(field, how, tmp_path, monkeypatch):
    from rl_bk.experiments import knowledge_pipeline as pipeline

    assert set(SHAPING_CHANGES) == set(ShapingSettings.model_fields)
    monkeypatch.setenv("RLBK_KNOWLEDGE_DIR", str(tmp_path))
    task = load_task("babyai-gotolocal-redball-s20")
    folder = pipeline.artifact_dir(task, "bk-goal", "oracle")
    folder.mkdir(parents=True)
    (folder / pipeline.DONE).write_text("{}")
    value, params = SHAPING_CHANGES[field], {"backend": "oracle"}
    if how == "sweep":
        params[field] = value
    else:
        task = task.model_copy(update={"knowledge": task.knowledge.updated({field: value})})
    config = get_method("bk-goal").build(task, 0, params)
    pipeline_ = config.build_learner_connector(OBS, ACTIONS)
    rewrite = next(c for c in pipeline_.connectors if isinstance(c, RewriteRewards))
    read = _what_the_shaping_term_reads(rewrite)
    assert read[field] == value
    defaults = ShapingSettings()
    assert all(read[f] == getattr(defaults, f) for f in read if f != field)


def _env_reward_weight(config) -> float:
    """The env reward's weight in what the config's learner trains on (1 with no rewrite)."""
    pieces = config.build_learner_connector(OBS, ACTIONS).connectors
    rewrite = next((c for c in pieces if isinstance(c, RewriteRewards)), None)
    return 1.0 if rewrite is None else rewrite.extrinsic_coeff


@pytest.mark.parametrize(
    "task_name, method, params",
    [
        ("babyai-gotolocal-redball-s20", "ppo", {}),
        ("babyai-gotolocal-redball-s20", "bk-goal", {"backend": "oracle"}),
        ("babyai-gotolocal-redball-s20", "rnd", {}),
        ("nethack-score", "oni-cosine-bow", {}),
        ("crafter-text-ellm", "ellm-novelty", {}),
        ("babyai-gotoredball-glam", "ppo", {}),
    ],
)
def test_the_env_reward_weight_is_the_tasks_for_every_method(
    task_name, method, params, tmp_path, monkeypatch
):
    from rl_bk.experiments import knowledge_pipeline as pipeline

    monkeypatch.setenv("RLBK_KNOWLEDGE_DIR", str(tmp_path))
    task = load_task(task_name)
    if method == "bk-goal":
        folder = pipeline.artifact_dir(task, "bk-goal", "oracle")
        folder.mkdir(parents=True)
        (folder / pipeline.DONE).write_text("{}")
    build = get_method(method).build
    assert _env_reward_weight(build(task, 0, params)) == task.ppo.extrinsic_coeff
    filed = task.model_copy(update={"ppo": task.ppo.model_copy(update={"extrinsic_coeff": 0.25})})
    assert _env_reward_weight(build(filed, 0, params)) == 0.25  # from the task file
    assert _env_reward_weight(build(task, 0, {**params, "extrinsic_coeff": 3.0})) == 3.0  # swept


def test_the_ppo_baseline_on_the_env_reward_as_it_is_rewrites_nothing():
    task = load_task("babyai-gotoredball-glam")
    assert task.ppo.extrinsic_coeff == 1.0
    pieces = get_method("ppo").build(task, 0, {}).build_learner_connector(OBS, ACTIONS)
    assert not any(isinstance(c, RewriteRewards) for c in pieces.connectors)


@pytest.mark.parametrize(
    "field, value",
    [("prior_kl_coeff", 0.2), ("low_level_steps", 3), ("greedy_low_level", True)],
)
def test_every_ptgm_rl_setting_reaches_the_penalty_or_the_high_level_env(
    field, value, tmp_path, monkeypatch
):
    from rl_bk.experiments import knowledge_pipeline as pipeline
    from rl_bk.methods.ptgm.prior_kl import PriorKLPenalty

    rl_fields = {"prior_kl_coeff", "low_level_steps", "greedy_low_level", "high_level_ppo"}
    assert rl_fields == set(PTGMSettings.model_fields) - set(PTGMSettings().pretraining())
    monkeypatch.setenv("RLBK_KNOWLEDGE_DIR", str(tmp_path))
    task = load_task("babyai-gotolocal-redball-s20-ptgm")
    folder = pipeline.artifact_dir(task, "ptgm")
    folder.mkdir(parents=True)
    (folder / pipeline.DONE).write_text("{}")
    for params in ({field: value}, {}):  # swept, and from the task file
        if not params:
            task = task.model_copy(update={"ptgm": task.ptgm.updated({field: value})})
        config = get_method("ptgm").build(task, 0, params)
        rewrite = next(
            c
            for c in config.build_learner_connector(OBS, ACTIONS).connectors
            if isinstance(c, RewriteRewards)
        )
        read = {
            "prior_kl_coeff": next(
                t for t in rewrite.terms if isinstance(t, PriorKLPenalty)
            ).kl_coeff,
            "low_level_steps": config.env_config["low_level_steps"],
            "greedy_low_level": config.env_config["greedy_low_level"],
        }
        assert read[field] == value
    # The ablation's KL weight is 0 whatever the file says.
    assert get_method("ptgm-no-kl").build(task, 0, {}).ptgm.prior_kl_coeff == 0.0


@pytest.mark.parametrize(
    "field, value, read",
    [
        ("model", "tiny", lambda spec: spec["model"]),
        ("lora_r", 4, lambda spec: spec["lora"]["r"]),
        ("lora_alpha", 8, lambda spec: spec["lora"]["alpha"]),
        ("max_prompt_tokens", 64, lambda spec: spec["max_prompt_tokens"]),
        ("float32_matmul_precision", "high", lambda spec: spec["float32_matmul_precision"]),
    ],
)
def test_every_glam_model_setting_reaches_the_policys_module(field, value, read):
    task = load_task("babyai-gotoredball-glam")
    task = task.model_copy(update={"glam": task.glam.updated({field: value})})
    spec = get_method("glam").build(task, 0, {}).get_default_rl_module_spec()
    assert read(spec.model_config) == value


@pytest.mark.parametrize(
    "method, section, field, value, read",
    [
        ("rnd", "rnd", "int_coeff", 0.5, lambda c: c.rnd.int_coeff),
        ("rnd", "rnd", "rnd_hiddens", [64], lambda c: c.rnd.rnd_hiddens),
        ("bc-ppo", "bc", "bc_epochs", 3, lambda c: c.bc.bc_epochs),
    ],
)
def test_rnd_and_bc_sections_reach_their_configs_and_sweeps_are_checked(
    method, section, field, value, read, tmp_path, monkeypatch
):
    from rl_bk.experiments import knowledge_pipeline as pipeline
    from rl_bk.experiments.sweep import expand_variants

    monkeypatch.setenv("RLBK_KNOWLEDGE_DIR", str(tmp_path))
    task = load_task("babyai-gotolocal-redkey-s20-ptgm")
    if method == "bc-ppo":
        folder = pipeline.artifact_dir(task, "bc")
        folder.mkdir(parents=True)
        (folder / pipeline.DONE).write_text("{}")
    filed = task.model_copy(update={section: getattr(task, section).updated({field: value})})
    assert read(get_method(method).build(filed, 0, {})) == value  # from the task file
    assert read(get_method(method).build(task, 0, {field: value})) == value  # swept
    bad = task.model_copy(update={"methods": [method], "sweep": {method: {field: [-1]}}})
    with pytest.raises(ValueError, match=field):  # checked before any trial, as the file's
        expand_variants(bad, [method])
