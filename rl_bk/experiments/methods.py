"""The methods a task can be run with, by name: each turns a task into an RLlib AlgorithmConfig.

``tune_run.py --methods ppo,...`` looks names up here. A method is a function
``(task, seed, params) -> AlgorithmConfig`` where ``params`` are the sweep's values of the
method's ``training(...)`` parameters for one trial. New methods (RND, BK shaping, ...) add
an entry to ``METHODS``; they build on :func:`base_ppo_config`, so every method of a task
shares its env, model, PPO hyper-parameters and runner layout, and comparisons are fair.

The bk-* methods read knowledge built before the sweep
(:mod:`rl_bk.experiments.knowledge_pipeline`); their trial parameters ``backend`` and
``candidate`` pick which artifact, the rest go to ``ShapedPPOConfig.training``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from ray.rllib.algorithms.algorithm_config import AlgorithmConfig

from rl_bk.experiments.ppo_config import base_ppo_config
from rl_bk.experiments.task_config import TaskConfig

BuildFn = Callable[[TaskConfig, int, Mapping[str, Any]], AlgorithmConfig]


class UnknownMethodError(ValueError):
    pass


@dataclass(frozen=True)
class Method:
    """A method, declared once: everything the sweep needs to know about it.

    ``knowledge``: the knowledge kind its trials need built before the sweep
    (:data:`rl_bk.experiments.knowledge_pipeline.KINDS`), if any. ``labels``: whether a
    labeler is part of it, so that its trials name a ``backend``: ``"offline"`` (its knowledge
    came from a labeler), ``"online"`` (it asks one while training), or None. ``settings``:
    the task file's section that holds its settings, if it has one."""

    name: str
    description: str
    build: BuildFn
    knowledge: str | None = None
    labels: Literal["offline", "online"] | None = None
    settings: str | None = None


def _build_ppo(task: TaskConfig, seed: int, params: Mapping[str, Any]) -> AlgorithmConfig:
    return base_ppo_config(task, seed, params)


def _build_rnd(task: TaskConfig, seed: int, params: Mapping[str, Any]) -> AlgorithmConfig:
    from rl_bk.algorithms.rnd_ppo import RNDPPOConfig

    return base_ppo_config(task, seed, params, config=RNDPPOConfig())


#: Trial parameters of the bk-* methods that choose the knowledge, not PPO's training():
#: the labeler, the code candidate, and whether the knowledge was told the mission.
KNOWLEDGE_PARAMS = ("backend", "candidate", "include_mission", "served")
#: The reward-model app that serves bk-pref's Phi to trials with ``served`` (one per sweep).
REWARD_MODEL_APP = "reward_models"


def knowledge_task(task: TaskConfig, params: Mapping[str, Any]) -> TaskConfig:
    """``task`` with a trial's ``include_mission`` (if it names one) in its knowledge section:
    the goal-aware variant of a task-agnostic task, or the reverse."""
    if "include_mission" not in params:
        return task
    aware = bool(params["include_mission"])
    knowledge = task.knowledge.model_copy(update={"include_mission": aware})
    return task.model_copy(update={"knowledge": knowledge})


def _shaped(kind: str) -> BuildFn:
    """A bk-* method: PPO shaped by the potential the task's built ``kind`` artifact gives."""

    def build(task: TaskConfig, seed: int, params: Mapping[str, Any]) -> AlgorithmConfig:
        from rl_bk.algorithms.bk_ppo import ShapedPPOConfig
        from rl_bk.algorithms.bk_ppo.settings import ShapingSettings
        from rl_bk.experiments.knowledge_pipeline import source_spec

        chosen = {k: params[k] for k in KNOWLEDGE_PARAMS if k in params}
        training = {k: v for k, v in params.items() if k not in KNOWLEDGE_PARAMS}
        options = {"candidate": chosen["candidate"]} if "candidate" in chosen else {}
        if kind == "bk-pref" and chosen.get("served", task.knowledge.preference.served):
            # Phi from the reward-model app, one call per train batch (run.py registers the
            # model and starts the app before the sweep).
            from rl_bk.experiments.knowledge_pipeline import (
                SERVED_POTENTIAL_VERSION,
                published_location,
                served_potential_name,
            )

            where = published_location(knowledge_task(task, chosen), kind, chosen.get("backend"))
            options.update(served=(served_potential_name(where), SERVED_POTENTIAL_VERSION),
                           endpoint=f"handle:{REWARD_MODEL_APP}")  # fmt: skip
        spec = source_spec(knowledge_task(task, chosen), kind, chosen.get("backend"), options)
        shaping = {name: getattr(task.knowledge, name) for name in ShapingSettings.model_fields}
        training = {**shaping, **training}
        config = base_ppo_config(task, seed, training, config=ShapedPPOConfig())
        return config.training(potential=spec)

    return build


def labeler_spec(task: TaskConfig, backend: str | None = None):
    """The task's labeler (its ``knowledge`` section), for labelling while training."""
    import os

    from rl_bk.experiments.labeler_app import app_name, uses_labeler_app
    from rl_bk.online_labels import LabelerSpec

    k = task.knowledge
    served = {}
    if uses_labeler_app(task):  # the sweep's shared Serve deployment, through its handle
        served = {"serve_url": "handle", "serve_app": app_name(task, backend),
                  "timeout_s": task.labeler.timeout_s}  # fmt: skip
    return LabelerSpec(backend=backend or k.backend, packaged=k.packaged, model_path=k.model_path,
                       base_url=k.base_url, model=k.model,
                       store_path=os.environ.get("RLBK_LABEL_STORE"), **served)  # fmt: skip


def _oni(reward_type: str) -> BuildFn:
    """An oni-* method (or motif): PPO on ONI's intrinsic reward of ``reward_type``."""

    def build(task: TaskConfig, seed: int, params: Mapping[str, Any]) -> AlgorithmConfig:
        from rl_bk.algorithms.oni_ppo import ONIPPOConfig
        from rl_bk.experiments.knowledge_pipeline import built_artifact, family_of

        training = {k: v for k, v in params.items() if k not in KNOWLEDGE_PARAMS}
        backend = params.get("backend")
        online = {"reward_type": reward_type, "family": family_of(task.env),
                  "labeler": labeler_spec(task, backend), **task.oni.model_dump()}  # fmt: skip
        if reward_type == "motif":
            online["motif_dir"] = str(built_artifact(task, "motif", backend))
        return base_ppo_config(task, seed, {**online, **training}, config=ONIPPOConfig())

    return build


def _ellm(suggester: str) -> BuildFn:
    """ELLM (the labeler's goals; with the oracle backend, ELLM's oracle) or its novelty
    baseline (every goal of the vocabulary)."""

    def build(task: TaskConfig, seed: int, params: Mapping[str, Any]) -> AlgorithmConfig:
        from rl_bk.algorithms.ellm_ppo import ELLMPPOConfig
        from rl_bk.experiments.knowledge_pipeline import family_of

        training = {k: v for k, v in params.items() if k not in KNOWLEDGE_PARAMS}
        settings = {**task.ellm.model_dump(), **training}
        conditioned = settings.pop("goal_conditioned")
        family, labeler = family_of(task.env), labeler_spec(task, params.get("backend"))
        online = {"suggester": suggester, "family": family, "labeler": labeler}
        config = base_ppo_config(task, seed, {**online, **settings}, config=ELLMPPOConfig())
        # The policy sees the embedded suggestions (ELLM's goal-conditioning); the novelty
        # baseline suggests everything, so its policy stays unconditioned.
        if conditioned and suggester == "llm":
            from rl_bk.algorithms.ellm_ppo.goal_observation import register_goal_conditioned_env
            from rl_bk.algorithms.ellm_ppo.intrinsic_reward import resolve_max_goals

            max_goals = resolve_max_goals(settings["max_goals"], labeler)
            env = register_goal_conditioned_env(task.env, labeler, family, max_goals)
            config.environment(env, env_config=dict(task.env_config))
        return config

    return build


def _ptgm(prior_kl: bool) -> BuildFn:
    """PTGM's high-level PPO over the task's pre-trained goals, with or without the KL term."""

    def build(task: TaskConfig, seed: int, params: Mapping[str, Any]) -> AlgorithmConfig:
        from rl_bk.algorithms.ptgm_ppo import PTGMPPOConfig
        from rl_bk.experiments.knowledge_pipeline import built_artifact

        p = task.ptgm
        rl = {
            "ptgm_dir": str(built_artifact(task, "ptgm")),
            "prior_kl_coeff": p.prior_kl_coeff,
            "low_level_steps": p.low_level_steps,
            "greedy_low_level": p.greedy_low_level,
        }
        training = {**p.high_level_ppo, **rl, **params}
        if not prior_kl:
            training["prior_kl_coeff"] = 0.0
        config = base_ppo_config(task, seed, training, config=PTGMPPOConfig())
        return config.goal_environment(task.env, dict(task.env_config))

    return build


def _build_bc_ppo(task: TaskConfig, seed: int, params: Mapping[str, Any]) -> AlgorithmConfig:
    from rl_bk.algorithms.bc_ppo import BCPPOConfig
    from rl_bk.experiments.knowledge_pipeline import built_artifact

    bc = {"bc_dir": str(built_artifact(task, "bc")), **params}
    return base_ppo_config(task, seed, bc, config=BCPPOConfig())


def _build_glam(task: TaskConfig, seed: int, params: Mapping[str, Any]) -> AlgorithmConfig:
    from rl_bk.algorithms.glam_ppo import GLAMPPOConfig, register_glam_env

    g = task.glam
    glam = {"glam_model": g.model, "lora_r": g.lora_r, "lora_alpha": g.lora_alpha,
            "max_prompt_tokens": g.max_prompt_tokens}  # fmt: skip
    config = base_ppo_config(task, seed, {**g.ppo, **glam, **params}, config=GLAMPPOConfig())
    config.learners(num_gpus_per_learner=g.num_gpus_per_learner)
    config.env_runners(num_gpus_per_env_runner=g.num_gpus_per_env_runner)
    env = register_glam_env(task.env, n_obs=g.n_obs, reward_scale=g.reward_scale)
    return config.environment(env, env_config=dict(task.env_config))


_DECLARED = [
    Method("ppo", "plain PPO on the symbolic observation: the baseline", _build_ppo),
    Method("rnd", "PPO with random network distillation (two value heads): the exploration "
           "baseline", _build_rnd),
    Method("bk-code", "PPO shaped by a potential the LLM wrote as code (BK-Code)",
           _shaped("bk-code"), knowledge="bk-code", labels="offline", settings="knowledge"),
    Method("bk-pref", "PPO shaped by a preference-transformer potential trained on LLM "
           "preference labels (BK-Pref)", _shaped("bk-pref"), knowledge="bk-pref",
           labels="offline", settings="knowledge"),
    Method("bk-goal", "PPO shaped by similarity to LLM-suggested goals (BK-Goal)",
           _shaped("bk-goal"), knowledge="bk-goal", labels="offline", settings="knowledge"),
    Method("ellm", "PPO on ELLM's reward for achieving goals the LLM suggested for the caption",
           _ellm("llm"), labels="online", settings="ellm"),
    Method("ellm-novelty", "ELLM's novelty baseline: every goal of the vocabulary, once per "
           "episode", _ellm("novelty"), settings="ellm"),
    Method("oni-none", "ONI's extrinsic-only baseline (the env reward scaled as ONI's)",
           _oni("none"), settings="oni"),
    Method("oni-retrieval", "PPO on ONI-Retrieval: captions labelled online, a label table",
           _oni("retrieval"), labels="online", settings="oni"),
    Method("oni-classification", "PPO on ONI-Classification: a classifier fitted online on "
           "LLM helpfulness labels", _oni("classification"), labels="online", settings="oni"),
    Method("oni-ranking", "PPO on ONI-Ranking: a Bradley-Terry model fitted online on LLM "
           "caption preferences", _oni("ranking"), labels="online", settings="oni"),
    Method("oni-cosine-bow", "PPO on ONI's cosine-BoW baseline: similarity to the goal text",
           _oni("cosine-bow"), settings="oni"),
    Method("motif", "PPO on Motif: a reward model trained offline on LLM caption preferences",
           _oni("motif"), knowledge="motif", labels="offline", settings="oni"),
    Method("ptgm", "PTGM: a high-level PPO picks pre-trained goals, a frozen goal-conditioned "
           "policy pursues each; KL to the goal prior", _ptgm(prior_kl=True), knowledge="ptgm",
           settings="ptgm"),
    Method("ptgm-no-kl", "PTGM without the goal prior's KL term (its ablation)", _ptgm(False),
           knowledge="ptgm", settings="ptgm"),
    Method("bc-ppo", "flat PPO whose policy starts from behaviour cloning on PTGM's dataset "
           "(PTGM's data without its hierarchy)", _build_bc_ppo, knowledge="bc"),
    Method("glam", "GLAM: a causal language model is the policy (action texts scored by "
           "likelihood), fine-tuned by PPO", _build_glam, settings="glam"),
]  # fmt: skip
METHODS: dict[str, Method] = {m.name: m for m in _DECLARED}

# Views of the declarations, for the sweep's preparation.
#: Methods whose trials need knowledge built before the sweep starts, and its kind.
KNOWLEDGE_KINDS = {m.name: m.knowledge for m in _DECLARED if m.knowledge}
#: Methods whose knowledge came from a labeler (their ``backend`` picks it).
KNOWLEDGE_METHODS = tuple(m.name for m in _DECLARED if m.labels == "offline")
#: Methods whose trials ask a labeler while they train (their ``backend`` picks it).
LABELLING_METHODS = tuple(m.name for m in _DECLARED if m.labels == "online")


def get_method(name: str) -> Method:
    try:
        return METHODS[name]
    except KeyError:
        valid = ", ".join(sorted(METHODS))
        raise UnknownMethodError(f"unknown method {name!r}; valid methods: {valid}") from None
