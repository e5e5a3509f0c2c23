"""BK (Zhang et al. 2024, "Improving Sample Efficiency of Reinforcement Learning with Background
Knowledge from Large Language Models"; mansicer/background-knowledge-rl): bk-code, bk-pref and
bk-goal, each a knowledge kind built before the sweep. A trial's ``backend``, ``candidate``
and ``include_mission`` pick which artifact, ``served`` whether Phi comes from the
reward-model app; the rest go to ``ShapedPPOConfig.training``. RLlib and the family's classes
are imported inside the build functions, so the registry loads these declarations without them.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from rl_bk.experiments.artifacts import Knowledge, family_of, is_built, task_mission
from rl_bk.experiments.labelers import labeler_for
from rl_bk.experiments.task_config import TaskConfig
from rl_bk.methods.base import (
    KNOWLEDGE_PARAMS,
    BuildFn,
    Method,
    algorithm_of,
    knowledge_task,
    training_params,
)
from rl_bk.methods.bk.settings import ShapingSettings
from rl_bk.storage import is_uri

if TYPE_CHECKING:
    from ray.rllib.algorithms.algorithm_config import AlgorithmConfig

#: The reward-model app that serves bk-pref's Phi to trials with ``served`` (one per sweep).
REWARD_MODEL_APP = "reward_models"
SERVED_POTENTIAL_VERSION = "1"


# ------------------------------------------------------------------------- the builders
def hand_written_code(task: TaskConfig) -> str:
    """The text of the task's hand-written BK-Code potential (``knowledge.code.path``)."""
    path = Path(task.knowledge.code.path or "")
    if not path.is_absolute():
        path = Path(__file__).resolve().parents[3] / path  # relative to the repository
    if not path.is_file():
        raise FileNotFoundError(f"knowledge.code.path: no potential function at {path}")
    return path.read_text()


def _build_code(task: TaskConfig, labeler, episodes, folder: Path) -> dict:
    # kept light: the registry loads the family on use (module docstring)
    from rl_bk.methods.bk.code.writer import write_potential_code

    c, family, mission = task.knowledge.code, family_of(task.env), task_mission(task)
    if c.path:
        return _copy_hand_written_code(task, folder, family)
    result = write_potential_code(
        labeler,
        episodes,
        folder,
        family=family,
        mission=mission,
        rounds=c.rounds,
        segments_per_round=c.segments_per_round,
        horizon=c.horizon,
        candidates=c.candidates,
        seed=task.knowledge.dataset.seed,
    )
    return {"result": repr(result)}


def _copy_hand_written_code(task: TaskConfig, folder: Path, family: str) -> dict:
    """A hand-written potential as a BK-Code artifact: no labeler, said so in its facts."""
    # kept light: the registry loads the family on use (module docstring)
    from rl_bk.methods.bk.code.writer import FUNCTION_NAME

    code = hand_written_code(task)
    if f"def {FUNCTION_NAME}(" not in code:
        raise ValueError(
            f"knowledge.code.path {task.knowledge.code.path}: the file must define "
            f"{FUNCTION_NAME}(window)"
        )
    (folder / "code-final.py").write_text(code)
    meta = {
        "family": family,
        "horizon": task.knowledge.code.horizon,
        "hand_written": task.knowledge.code.path,
    }
    (folder / "meta.json").write_text(json.dumps(meta, indent=2))
    return {"labels": f"hand-written:{task.knowledge.code.path}", "is_oracle": False}


def _build_pref(task: TaskConfig, labeler, episodes, folder: Path) -> dict:
    # kept light: the registry loads the family on use (module docstring)
    from rl_bk.methods.bk.preference.training import train_preference_potential

    p = task.knowledge.preference
    report = train_preference_potential(
        labeler,
        episodes,
        folder,
        family=family_of(task.env),
        mission=task_mission(task),
        pairs=p.pairs,
        horizon=p.horizon,
        epochs=p.epochs,
        seed=task.knowledge.dataset.seed,
        soft_labels=p.soft_labels,
    )
    return {"report": repr(report)}


def _build_goals(task: TaskConfig, labeler, episodes, folder: Path) -> dict:
    # kept light: the registry loads the family on use (module docstring)
    from rl_bk.methods.bk.goals.builder import build_goal_list
    from rl_bk.methods.bk.goals.potential import save_sentence_vectors

    g = task.knowledge.goals
    goals = build_goal_list(
        labeler,
        episodes,
        folder,
        family=family_of(task.env),
        mission=task_mission(task),
        iterations=g.iterations,
        seed=task.knowledge.dataset.seed,
    )
    # The dataset's caption sentences, embedded once here rather than in every trial.
    save_sentence_vectors(folder, [c for ep in episodes for c in ep.captions], family_of(task.env))
    return {"goals": repr(goals)[:2000]}


# ------------------------------------------------------------------- beside the reference's
#: episodes of the dataset whose states two BK-Code potentials are compared on
CODE_EPISODES = 50


def _built_folders(knowledge: Knowledge, task: TaskConfig, backends: list[str]) -> dict:
    folders = {b: knowledge.folder(task, b) for b in backends}
    return {b: folder if is_built(folder) else None for b, folder in folders.items()}


def _compare_code(task: TaskConfig, backends: list[str], reference: str, episodes) -> list[str]:
    # kept light: the registry loads the family on use (module docstring)
    from rl_bk.methods.bk.comparison import code_lines

    return code_lines(_built_folders(CODE, task, backends), reference, episodes[:CODE_EPISODES])


def _compare_pref(task: TaskConfig, backends: list[str], reference: str, episodes) -> list[str]:
    # kept light: the registry loads the family on use (module docstring)
    from rl_bk.methods.bk.comparison import preference_lines
    from rl_bk.methods.bk.preference.training import label_pairs, preference_pairs

    folders, p = _built_folders(PREF, task, backends), task.knowledge.preference
    rng = np.random.default_rng(task.knowledge.dataset.seed)  # the pairs the builds labelled
    mission = task_mission(task)
    _, _, requests = preference_pairs(
        episodes, p.pairs, p.horizon, family_of(task.env), mission, rng
    )
    choices = {}
    for b, folder in folders.items():
        if folder is not None:  # read back from the label store: the build asked these pairs
            labels = label_pairs(labeler_for(task, b).build(), requests)
            choices[b] = [None if lab is None else lab.choice for lab in labels]
    return preference_lines(folders, reference, choices)


def _compare_goals(task: TaskConfig, backends: list[str], reference: str, episodes) -> list[str]:
    # kept light: the registry loads the family on use (module docstring)
    from rl_bk.methods.bk.comparison import goal_lines

    return goal_lines(_built_folders(GOAL, task, backends), reference)


def _section(section) -> dict[str, Any]:
    # RL-time choices (how Phi is computed, not what it is) do not make a new artifact.
    return {"section": section.model_dump(mode="json", exclude={"served"})}


CODE = Knowledge(
    "bk-code",
    build=_build_code,
    settings=lambda task: _section(task.knowledge.code),
    hand_written=lambda task: hand_written_code(task) if task.knowledge.code.path else None,
    compare=_compare_code,
)
PREF = Knowledge(
    "bk-pref",
    build=_build_pref,
    settings=lambda task: _section(task.knowledge.preference),
    compare=_compare_pref,
)
GOAL = Knowledge(
    "bk-goal",
    build=_build_goals,
    settings=lambda task: _section(task.knowledge.goals),
    compare=_compare_goals,
)


# ------------------------------------------------------------------- the potential at RL time
def source_spec(
    task: TaskConfig,
    kind: str,
    backend: str | None = None,
    options: dict[str, Any] | None = None,
    root: Path | None = None,
):
    """The built artifact of ``kind`` as a potential source spec, or a clear error."""
    # kept light: the registry loads the family on use (module docstring)
    from rl_bk.methods.bk.sources import SourceSpec

    knowledge = next(k for k in (CODE, PREF, GOAL) if k.kind == kind)
    location = knowledge.built(task, backend, root)
    if kind == "bk-goal":
        g = task.knowledge.goals
        options = {
            "top_k": g.top_k,
            "horizon": g.horizon,
            **({"threshold": g.threshold} if g.threshold is not None else {}),
            **(options or {}),
        }
    return SourceSpec(kind, location, dict(options or {}))


def served_potential_name(location: str) -> str:
    """The name a bk-pref artifact is registered under in the reward-model registry."""
    return f"bk-pref-{location.rstrip('/').rsplit('/', 1)[-1]}"


def register_served_potential(task: TaskConfig, backend: str | None, root: Path) -> str:
    """Exports a built bk-pref artifact's model to the reward-model registry at ``root`` (once;
    the name is the artifact's), so the reward-model app can serve its Phi. Returns the name."""
    # kept light: the registry loads the family on use (module docstring)
    from rl_bk.methods.bk.preference.model import load_model, script
    from rl_bk.reward_models.registry import save_reward_model

    folder = PREF.folder(task, backend)
    name = served_potential_name(str(folder))
    if not (root / name / SERVED_POTENTIAL_VERSION / "meta.json").is_file():
        model, config = load_model(folder)
        save_reward_model(
            script(model, config.obs_dim),
            name,
            SERVED_POTENTIAL_VERSION,
            kind="potential",
            input="vector",
            input_dim=config.input_dim,
            notes=f"bk-pref from {folder}",
            root=root,
        )
    return name


def reward_models_root(task: TaskConfig) -> Path:
    """The reward-model registry the sweep's reward-model app reads: on the task's storage
    when it is a shared mount, else this machine's default."""
    # kept light: the registry loads the family on use (module docstring)
    from rl_bk.reward_models.registry import default_root

    if task.storage is not None and not is_uri(task.storage):
        return Path(task.storage) / "reward_models"
    return default_root()


def serve_potential(task: TaskConfig, backend: str | None) -> None:
    """Before the sweep, for a bk-pref variant with ``served``: its model registered and the
    reward-model app up (its trials score through the app's handle)."""
    # kept light: the registry loads the family on use (module docstring)
    from serve_deployments.reward_model import ensure_reward_model_app

    root = reward_models_root(task)
    register_served_potential(task, backend, root)
    ensure_reward_model_app(str(root), REWARD_MODEL_APP)


def _serve_if_asked(task: TaskConfig, params: Mapping[str, Any]) -> None:
    """bk-pref's ``before_sweep``: a variant with ``served`` gets its reward-model app."""
    if params.get("served", task.knowledge.preference.served):
        serve_potential(knowledge_task(task, params), params.get("backend"))


def _shaped(knowledge: Knowledge) -> BuildFn:
    """A bk-* method: PPO shaped by the potential the task's built ``knowledge`` gives."""
    kind = knowledge.kind

    def build(task: TaskConfig, seed: int, params: Mapping[str, Any]) -> AlgorithmConfig:
        # kept light: the registry loads the family on use (module docstring)
        from rl_bk.experiments.ppo_config import base_config
        from rl_bk.methods.bk import ShapedAPPOConfig, ShapedPPOConfig

        chosen = {k: params[k] for k in KNOWLEDGE_PARAMS if k in params}
        training = training_params(params)
        options = {"candidate": chosen["candidate"]} if "candidate" in chosen else {}
        if kind == "bk-pref" and chosen.get("served", task.knowledge.preference.served):
            # Phi from the reward-model app, one call per train batch (serve_potential
            # registers the model and starts the app before the sweep).
            where = PREF.published(knowledge_task(task, chosen), chosen.get("backend"))
            options.update(
                served=(served_potential_name(where), SERVED_POTENTIAL_VERSION),
                endpoint=f"handle:{REWARD_MODEL_APP}",
            )
        spec = source_spec(knowledge_task(task, chosen), kind, chosen.get("backend"), options)
        # the task file's shaping first; a swept field (in ``training``) replaces its value
        shaping = ShapingSettings(
            **task.knowledge.model_dump(include=set(ShapingSettings.model_fields))
        )
        training = {"shaping": shaping, **training}
        config = base_config(
            task,
            seed,
            training,
            algorithm=algorithm_of(task, params),
            ppo=ShapedPPOConfig,
            appo=ShapedAPPOConfig,
            method=kind,
        )
        return config.training(potential=spec)

    return build


#: The shaping term summed over each sampled chunk (the learner's ``shaping_return_mean``),
#: shown beside the env return, which stays the env's: early in training the policy is still
#: near uniform and every method's episodes can be the same, while their rewards are not.
COLUMNS = ("shaping_return_mean",)

METHODS = [
    Method(
        "bk-code",
        "PPO shaped by a potential the LLM wrote as code (BK-Code)",
        _shaped(CODE),
        knowledge=CODE,
        labels="offline",
        settings="knowledge",
        columns=COLUMNS,
        appo=True,
    ),
    Method(
        "bk-pref",
        "PPO shaped by a preference-transformer potential trained on LLM "
        "preference labels (BK-Pref)",
        _shaped(PREF),
        knowledge=PREF,
        labels="offline",
        settings="knowledge",
        columns=COLUMNS,
        appo=True,
        before_sweep=_serve_if_asked,
    ),
    Method(
        "bk-goal",
        "PPO shaped by similarity to LLM-suggested goals (BK-Goal)",
        _shaped(GOAL),
        knowledge=GOAL,
        labels="offline",
        settings="knowledge",
        columns=COLUMNS,
        appo=True,
    ),
]
