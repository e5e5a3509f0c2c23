"""A task's experiment, as written in ``tune_configs/<task>.yaml``, validated: the environment,
the model, PPO's hyper-parameters, the stop criterion, the seeds and the sweep grid, with
``extends:`` and ``smoke:``. Unknown keys are errors (a typo must not silently fall back to a
default), reported in one line with the valid keys. Details: docs/tasks.md#task-files.
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal, get_args

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    create_model,
    field_validator,
    model_validator,
)

from rl_bk.labeling.config import LabelerConfig
from rl_bk.methods import FAMILIES
from rl_bk.methods.bk.settings import BKSettings
from rl_bk.methods.oni.settings import MotifSettings
from rl_bk.metrics import MAIN_METRICS

TUNE_CONFIGS_DIR = Path(__file__).resolve().parents[2] / "tune_configs"


class TaskConfigError(ValueError):
    """A task that does not exist, or a task file that does not parse or validate."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class PPOParams(_Strict):
    """Arguments of ``PPOConfig.training(...)``: RLlib-style PPO defaults (clip 0.2, gradient
    norm 0.5, 2,048 env steps per update); BK's own settings are in ``_babyai_bk.yaml``.

    Every method of a task shares them, so differences come from the method. PPO is
    clip-only, as in CleanRL-style PPO (BK, RND, ONI's sample-factory): RLlib's adaptive KL
    loss is off. RLlib's ``vf_clip_param`` clamps each squared value error (not the value's
    change, as CleanRL's value clipping does); its default of 10 binds once returns reach
    ~3 (BK's x10 rewards plus shaping), which stops value learning, so it is set where it
    never binds.
    """

    #: the env reward's weight in what every method of the task trains on, beside the
    #: method's own reward terms (BK's tasks: 10, as BK's ``train_rs.py``; 0: reward-free)
    extrinsic_coeff: float = Field(1.0, ge=0)
    #: a value, or RLlib's schedule ``[[0, value], [env_steps, value], ...]`` (a sweep's too)
    lr: float | list[tuple[int, float]] = 3e-4
    gamma: float = 0.99
    lambda_: float = 0.95
    clip_param: float = 0.2
    entropy_coeff: float | list[tuple[int, float]] = 0.01
    vf_loss_coeff: float = 0.5
    grad_clip: float | None = 0.5
    use_kl_loss: bool = False
    kl_coeff: float = Field(0.0, ge=0)
    vf_clip_param: float = Field(1.0e6, gt=0)
    train_batch_size_per_learner: int = Field(2048, gt=0)
    minibatch_size: int = Field(256, gt=0)
    num_epochs: int = Field(4, gt=0)
    #: The loss options of :class:`~rl_bk.algorithms.ppo.config.BasePPOConfig` (RLlib's by
    #: default; BK's tasks set CleanRL's, as BK's ``train_rs.py``).
    value_loss: Literal["rllib", "cleanrl"] = "rllib"
    advantage_normalization: Literal["batch", "minibatch"] = "batch"
    adam_epsilon: float = Field(1e-8, gt=0)
    bootstrap_time_limits: bool = True
    #: RLlib's first epoch takes the batch in episode order; True shuffles it as CleanRL does
    shuffle_first_epoch: bool = False
    #: RLlib's minibatch count covers its artificial steps too (17 on BK's batch); True:
    #: num_epochs x train batch // minibatch (16), as CleanRL's
    minibatches_from_env_steps: bool = False


#: What trials train with: RLlib's PPO (synchronous: the env runners wait while the learner
#: updates) or APPO (asynchronous: they sample while it updates, V-trace corrects the lag).
Algorithm = Literal["ppo", "appo"]
ALGORITHMS: tuple[str, ...] = get_args(Algorithm)


class APPOParams(_Strict):
    """APPO's own settings (``algorithm: appo``; RLlib's defaults but the last). APPO also
    reads the ``ppo:`` section's lr, gamma, clip_param, entropy_coeff, vf_loss_coeff,
    grad_clip, KL settings, train batch and minibatch; GAE's lambda, the value clip and
    rl-bk's PPO loss options are PPO's alone."""

    #: passes over each train batch per update (minibatches of ``ppo.minibatch_size``)
    num_epochs: int = Field(1, gt=0)
    #: the learner's buffer of recent train batches, each trained on this many times
    circular_buffer_num_batches: int = Field(8, gt=0)
    circular_buffer_iterations_per_batch: int = Field(2, gt=0)
    #: updates between refreshes of the target policy the loss measures the ratio against
    target_network_update_freq: int = Field(2, gt=0)
    #: V-trace's importance-weight clips (rho-bar, and the policy gradient's)
    vtrace_clip_rho_threshold: float = Field(1.0, gt=0)
    vtrace_clip_pg_rho_threshold: float = Field(1.0, gt=0)
    #: seconds each training step waits for the env runners' samples before it goes on.
    #: RLlib's default, 0, polls without pause: thousands of training steps an iteration,
    #: and on a few cores that polling takes the CPU the learner thread and the runners
    #: need (bench/results/env_throughput.md measures it). A speed setting: it delays a
    #: batch's way to the learner by at most this, and leaves the loss as it is.
    timeout_s_sampler_manager: float = Field(0.05, ge=0)


class ModelParams(_Strict):
    """The policy network: ``network`` "mlp" is RLlib's default PPO module, with the fields
    of ``DefaultModelConfig`` below; "bk-conv" is BK's conv network over BabyAI's 7x7 view
    (:class:`~rl_bk.algorithms.ppo.grid_conv_module.GridConvPPOModule`), which ignores them."""

    network: Literal["mlp", "bk-conv"] = "mlp"
    fcnet_hiddens: list[int] = [256, 256]
    fcnet_activation: Literal["tanh", "relu", "silu", "linear"] = "tanh"
    vf_share_layers: bool = False


class EnvRunnerParams(_Strict):
    """Arguments of ``AlgorithmConfig.env_runners(...)``, per trial.

    The defaults (one runner, 8 vectorised envs, half a CPU) are a start; each task file sets
    its own layout, measured for its env and network (``bench/results/env_throughput.md``,
    ``bench/results/bk_layout.md``).
    """

    num_env_runners: int = Field(1, ge=0)
    num_envs_per_env_runner: int = Field(8, gt=0)
    num_cpus_per_env_runner: float = Field(0.5, gt=0)
    #: APPO's sample requests queued per runner (PPO samples in lock step and ignores it).
    #: RLlib's 1 leaves a runner idle from the end of its sample until the main loop has
    #: collected every runner's and asked again; 2 keeps it sampling, at the price of one
    #: more fragment of policy lag (bench/results/env_throughput.md measures it).
    max_requests_in_flight_per_env_runner: int = Field(1, gt=0)


class LearnerParams(_Strict):
    """The trial's learner (in the trial's own process: ``num_learners=0``)."""

    #: torch threads for the learner's update (None: one). More help where the update is
    #: compute-bound and the runners idle meanwhile (BK's conv network: bk_layout.md).
    threads: int | None = Field(None, ge=1)
    #: GPUs for the learner (RLlib's ``num_gpus_per_learner``; fractions share one GPU
    #: between trials). 0: it updates on the CPU, as every committed study here did. GLAM
    #: has its own (``glam.num_gpus_per_learner``), which wins for its trials.
    num_gpus: float = Field(0.0, ge=0)


class EvaluationParams(_Strict):
    """Evaluation beside training, on the trial's own env runner (``AlgorithmConfig.
    evaluation``); results appear as ``evaluation/env_runners/...``.

    BK evaluates every 20k env steps with 50 episodes of the greedy (argmax) policy
    (``utils/evaluate.py``); ``every_env_steps`` None turns evaluation off.
    """

    every_env_steps: int | None = Field(None, gt=0)
    episodes: int = Field(50, gt=0)
    greedy: bool = True
    #: Also play the same episodes with the sampled policy, reported beside the greedy ones
    #: as ``evaluation/env_runners/sampled_*`` (lockstep evaluation only).
    sampled: bool = False
    #: Each episode on an env of its own, all in lockstep (one batched forward pass per
    #: step); false: RLlib's evaluation on one env, episode after episode (slower, the same
    #: estimate). Either way every episode runs to its end.
    lockstep: bool = True

    @model_validator(mode="after")
    def _sampled_needs_lockstep(self) -> EvaluationParams:
        if self.sampled and not self.lockstep:
            raise ValueError(
                "evaluation.sampled needs lockstep: true (RLlib's own evaluation plays one policy)"
            )
        return self


class StopParams(_Strict):
    num_env_steps: int = Field(1_000_000, gt=0)
    time_budget_s: float | None = None


class DatasetParams(_Strict):
    """Stage 1 of the BK pipeline: the trajectories knowledge is learned from."""

    env: str | None = None  # None: the task's env (BK collects on a pre-training env)
    #: RND-PPO's stochastic policy, uniform actions, or minigrid's BabyAI bot (BabyAI only)
    collector: Literal["rnd", "random", "bot"] = "rnd"
    bot_epsilon: float = Field(0.0, ge=0, le=1)  # the bot's share of random actions
    rnd_timesteps: int = Field(200_000, gt=0)  # RND training steps while collecting
    episodes: int = Field(200, gt=0)  # episodes saved in all
    collections: int = Field(4, gt=0)  # saved in this many rounds, evenly over training
    seed: int = 0


class KnowledgeParams(BKSettings):
    """How the methods with knowledge get it: which labeler, which data, which settings.

    ``labeler``: who labels (a :class:`~rl_bk.labeling.config.LabelerConfig`: ``backend``,
    ``packaged``, ``model_path``, ``base_url``, ``model``, ...), for every method of the task
    that asks for labels, offline or online; a trial's ``backend`` parameter (a sweep grid,
    or ``tune_run.py --backend``) names another backend. Where it runs is the ``labeler:``
    section's (:class:`LabelerParams`).
    ``include_mission``: requests carry the task's mission. BK's prompts withhold the goal,
    and its knowledge is built once on the pre-training env and reused on every task, so the
    default is False (one artifact for every task with the same dataset and settings); True
    makes a goal-aware variant, a different method, with one artifact per mission. A trial's
    ``include_mission`` parameter (a sweep grid) overrides it.

    BK's own settings (``code``, ``preference``, ``goals`` and the shaping) are
    :class:`~rl_bk.methods.bk.settings.BKSettings`, Motif's build settings
    (``motif``) are :class:`~rl_bk.methods.oni.settings.MotifSettings`; the rest here
    is shared by every method with offline knowledge or a labeler.
    """

    labeler: LabelerConfig = LabelerConfig()
    include_mission: bool = False
    dataset: DatasetParams = DatasetParams()
    motif: MotifSettings = MotifSettings()
    #: where built knowledge lives, as every process of a run sees it. None: the
    #: ``--knowledge-dir`` of the command, else ``$RLBK_KNOWLEDGE_DIR``, else
    #: ``~/.cache/rl-bk/knowledge``; ``tune_run.py`` resolves it once, and trials read it here.
    dir: str | None = None


class LabelerParams(_Strict):
    """Where trials get their labels (online: ELLM, ONI; offline: knowledge builds).

    ``local`` (the default on one machine): each trial labels in its own process, and the
    driver builds knowledge in its own. ``serve``: one Ray Serve labeler deployment per
    labeler backend, started before the sweep (or, with ``attach``, one already running under
    ``app_name``), which every trial and every knowledge build calls through its deployment
    handle; its replicas merge the calls of all trials (``@serve.batch``) and own the label
    store. Who labels (backend, model, label store) is ``knowledge.labeler``; the rest here
    says where the deployment runs.
    """

    mode: Literal["local", "serve"] = "local"
    app_name: str = "labeler"  # a backend other than the task's gets "<app_name>-<backend>"
    attach: bool = False  # True: use the running app, never start one
    num_replicas: int = Field(1, ge=1)
    max_replicas: int | None = Field(None, ge=1)  # above num_replicas: autoscaling
    #: CPUs reserved per replica. 0 by default: on one machine a trial takes every CPU, and a
    #: reserved share would leave no room for it (the replica still computes, unreserved)
    num_cpus: float = Field(0.0, ge=0)
    num_gpus: float = Field(0.0, ge=0)
    #: custom resources per replica: {"llm_node": 1} on cluster.yaml's GPU workers
    resources: dict[str, float] = {}
    max_batch_size: int = Field(64, ge=1)  # handle calls merged per backend call
    #: how long a call for new labels waits for others to merge with (stored labels never wait)
    batch_wait_timeout_s: float = Field(0.02, ge=0)
    timeout_s: float = Field(60.0, gt=0)  # a call's limit before it counts as failed


class _SharedSections(_Strict):
    """The sections every task has; each method family's own section (``oni:``, ``ellm:``,
    ...) is added from its ``settings.py`` (:data:`TaskConfig`)."""

    name: str
    description: str
    env: str
    env_config: dict[str, Any] = {}
    methods: list[str] = ["ppo"]
    metric: Literal[tuple(MAIN_METRICS)] = "success_rate"  # type: ignore[valid-type]
    success_threshold: float = Field(0.9, gt=0, le=1)
    seeds: list[int] = [0, 1, 2]
    #: what trials train with: "ppo" (synchronous) or "appo" (asynchronous, ``appo:``); a
    #: sweep grid's ``algorithm`` overrides it per variant
    algorithm: Algorithm = "ppo"
    ppo: PPOParams = PPOParams()
    appo: APPOParams = APPOParams()
    model: ModelParams = ModelParams()
    env_runners: EnvRunnerParams = EnvRunnerParams()
    learner: LearnerParams = LearnerParams()
    stop: StopParams = StopParams()
    evaluation: EvaluationParams = EvaluationParams()
    checkpoint_every: int = Field(25, gt=0)  # training iterations between trial checkpoints
    #: env-step budgets at which the tables also give the main metric (sample efficiency)
    budgets: list[int] = []
    knowledge: KnowledgeParams = KnowledgeParams()
    labeler: LabelerParams = LabelerParams()
    #: where Tune's results and the knowledge artifacts go: a folder every node sees (a shared
    #: mount) or a URI (s3://, gs://, file://); None: this machine's results/ and cache
    storage: str | None = None
    #: method -> {training parameter -> values}; the trials are their cartesian product.
    sweep: dict[str, dict[str, list[Any]]] = {}

    @field_validator("env")
    @classmethod
    def _env_is_registered(cls, env: str) -> str:
        # kept light: rl-bk --help imports this module; env_registry loads gymnasium
        import env_registry

        env_registry.get_spec(env)  # raises UnknownEnvError, listing the registered names
        return env

    @field_validator("seeds")
    @classmethod
    def _seeds_not_empty(cls, seeds: list[int]) -> list[int]:
        if not seeds:
            raise ValueError("give at least one seed")
        return seeds


def _family_sections() -> dict[str, Any]:
    """Each family's task-file sections (``TASK_SECTIONS`` in ``rl_bk/methods/<family>/
    settings.py``), as pydantic fields defaulting to the section's defaults."""
    sections: dict[str, Any] = {}
    for family in FAMILIES:
        module = f"rl_bk.methods.{family}.settings"
        if importlib.util.find_spec(module) is None:  # a family without settings (ppo)
            continue
        for name, settings in importlib.import_module(module).TASK_SECTIONS.items():
            if name in _SharedSections.model_fields or name in sections:
                raise TypeError(f"{module}: the task-file section {name!r} is already taken")
            sections[name] = (settings, settings())
    return sections


#: A task file, validated: the shared sections and every family's own.
TaskConfig = create_model(
    "TaskConfig", __base__=_SharedSections, __module__=__name__, **_family_sections()
)


def deep_merge(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    """``override`` on ``base``, nested mappings merged key by key (as ``extends:`` does)."""
    merged = dict(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = deep_merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def _read_yaml(path: Path) -> dict[str, Any]:
    try:
        data = yaml.safe_load(path.read_text())
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f" line {mark.line + 1}" if mark else ""
        problem = getattr(err, "problem", None) or str(err).splitlines()[0]
        raise TaskConfigError(f"{path}:{where} is not valid YAML: {problem}") from None
    if not isinstance(data, dict):
        raise TaskConfigError(f"{path}: expected a mapping of keys to values at the top level")
    return data


def _load_raw(path: Path, seen: tuple[Path, ...] = ()) -> dict[str, Any]:
    if path in seen:
        raise TaskConfigError(f"{path}: 'extends' makes a cycle")
    data = _read_yaml(path)
    base_name = data.pop("extends", None)
    if base_name is None:
        return data
    base_path = path.parent / base_name
    if not base_path.is_file():
        raise TaskConfigError(f"{path}: extends {base_name!r}, which does not exist")
    return deep_merge(_load_raw(base_path, (*seen, path)), data)


#: Keys that moved, and where to: an older task file's key gets the way to fix it.
MOVED_KEYS = {
    f"{section}.extrinsic_coeff": "ppo.extrinsic_coeff (every method of a task shares it)"
    for section in ("knowledge", "oni", "ellm")
}


def _one_line(err: ValidationError, path: Path) -> str:
    problems = []
    for e in err.errors():
        where = ".".join(str(p) for p in e["loc"]) or "(top level)"
        if e["type"] == "extra_forbidden" and where in MOVED_KEYS:
            problems.append(f"{where}: moved to {MOVED_KEYS[where]}")
        elif e["type"] == "extra_forbidden":
            problems.append(f"{where}: unknown key")
        else:
            problems.append(f"{where}: {e['msg']}")
    return f"{path}: " + "; ".join(problems)


def available_tasks(configs_dir: Path = TUNE_CONFIGS_DIR) -> list[str]:
    """Task names: the YAML files of ``tune_configs`` not starting with ``_`` (bases)."""
    return sorted(p.stem for p in configs_dir.glob("*.yaml") if not p.stem.startswith("_"))


def load_task(
    name_or_path: str | Path, *, smoke: bool = False, configs_dir: Path = TUNE_CONFIGS_DIR
) -> TaskConfig:
    """Loads and validates a task by name (``tune_configs/<name>.yaml``) or by file path."""
    path = Path(name_or_path)
    if path.suffix not in (".yaml", ".yml"):
        path = configs_dir / f"{name_or_path}.yaml"
        if not path.is_file():
            tasks = ", ".join(available_tasks(configs_dir))
            raise TaskConfigError(f"unknown task {str(name_or_path)!r}; available tasks: {tasks}")
    elif not path.is_file():
        raise TaskConfigError(f"task file {path} does not exist")
    raw = _load_raw(path)
    smoke_overrides = raw.pop("smoke", None) or {}
    if smoke:
        raw = deep_merge(raw, smoke_overrides)
    raw.setdefault("name", path.stem)
    try:
        return TaskConfig.model_validate(raw)
    except ValidationError as err:
        raise TaskConfigError(_one_line(err, path)) from None
    except KeyError as err:  # env_registry.UnknownEnvError from the env validator
        raise TaskConfigError(f"{path}: {err}") from None


def with_swept_sections(
    task: TaskConfig, params: Mapping[str, Any]
) -> tuple[TaskConfig, dict[str, Any]]:
    """A trial's swept section fields set in ``task``, and its other (the method's)
    parameters. A sweep key ``<section>.<field>`` (``env_runners.num_envs_per_env_runner``,
    ``appo.circular_buffer_iterations_per_batch``) changes that field of the task file's
    section for the trial, validated as the file's own value is."""
    fields: dict[str, dict[str, Any]] = {}
    rest: dict[str, Any] = {}
    for key, value in params.items():
        section, dot, field = key.partition(".")
        if not dot:
            rest[key] = value
            continue
        current = getattr(task, section, None)
        if not isinstance(current, BaseModel) or "." in field:
            sections = sorted(k for k, v in task if isinstance(v, BaseModel))
            raise TaskConfigError(
                f"sweep key {key!r}: {section!r} is not a section of the task file; a swept "
                f"section field is <section>.<field>, with a section among {', '.join(sections)}"
            )
        if field not in type(current).model_fields:
            raise TaskConfigError(
                f"sweep key {key!r}: {section} has no field {field!r}; its fields: "
                f"{', '.join(type(current).model_fields)}"
            )
        fields.setdefault(section, {})[field] = value
    update = {}
    for section, values in fields.items():
        current = getattr(task, section)
        try:
            update[section] = type(current).model_validate({**current.model_dump(), **values})
        except ValidationError as err:
            where = ".".join(map(str, err.errors()[0]["loc"]))
            raise TaskConfigError(
                f"sweep key {section}.{where}: {err.errors()[0]['msg']}"
            ) from None
    return (task.model_copy(update=update) if update else task), rest
