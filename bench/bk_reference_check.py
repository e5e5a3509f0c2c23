"""Cross-check of rl-bk against BK's own code (mansicer/background-knowledge-rl) on BabyAI-Text
GoToLocal-RedBall-S20: the same two potentials through BK's ``train_rs.py``, unmodified, and
through rl-bk's pipeline (``tune_run.py``), greedy evaluation side by side.

    python -m bench.bk_reference_check --bk-repo PATH --setup-bk-env      # BK's venv, once
    python -m bench.bk_reference_check --bk-repo PATH --check-port 10000  # the port agrees?
    nohup python -m bench.bk_reference_check --bk-repo PATH > bk-reference-check.log 2>&1 &
    python -m bench.bk_reference_check --bk-repo PATH --parts bk/oracle  # these parts only
    python -m bench.bk_reference_check --parts rl-bk/oracle --rerun      # after a fix in rl-bk
    python -m bench.bk_reference_check --report-only                      # tables from the JSON
    python -m bench.bk_reference_check --bk-repo PATH --steps 4096 --seeds 0   # a smoke run

``PATH`` is a clone of BK's repository (a normal clone or a bare git directory); its HEAD is
exported, as committed, to ``bench/runs/bk-src/`` and run from there. ``--setup-bk-env``
makes BK's own virtual environment in ``bench/runs/bk-env/`` with only what ``train_rs.py``
needs for BabyAI (torch 2.13.0, numpy<2, gymnasium 0.29.1, BK's minigrid fork, its Crafter
package, tensorboardX, wandb, moviepy<2, transformers), from PyPI.

The potentials:

- ORACLE: rl-bk's task-agnostic BK-Code potential, as rl-bk's knowledge pipeline writes it
  (``build_knowledge`` with the oracle labeler; its ``code-final.py`` defines
  ``compute_potential(window)`` over a window of ``{"caption", "action"}`` records), and the
  same function in BK's format: a ``code-final.py`` whose ``compute_reward(cur_obs, past_obs,
  past_actions)`` rebuilds rl-bk's captions from BK's observations (the 3x7x7 grid scaled by
  10/5/3 per channel; the carried object is the grid's cell under the agent) with rl-bk's own
  captioner, copied into the file, and returns ``compute_potential`` of the last ``horizon``
  states of BK's window. BK's ``train_rs.py`` treats that value as Phi.
- ZERO: a potential that is always 0, in both formats (PPO on 10 x the env reward).

``--check-port N`` runs BK's own loader (``models/reward_provider.CodingReward``, with BK's
code header) in BK's environment on N random transitions of BK's env and compares every
value with rl-bk's ``compute_potential`` on the same window, captioned by rl-bk from the raw
view; any disagreement fails the command. The runs start with a shorter check of their own.

Plan: seeds 0, 1, 2, 300k env steps, {BK's code, rl-bk} x {ORACLE, ZERO} = 12 runs, each a
part; each finished part's evaluation curve is kept in
``bench/results/bk-reference-check.json``, so the check resumes across sessions (a part
that was running starts again: BK's script cannot resume; rl-bk's resumes from its
checkpoints when its folder is still here). The plan is written to
``bench/results/bk-reference-check.md`` before the first run; the tables and
``bench/results/bk-reference-check.png`` are rewritten after every part. ``--steps`` or
``--seeds`` other than the plan's write under ``bench/runs/bk-reference-check-smoke/``.
``--rerun`` runs finished rl-bk parts again (after a fix): their earlier records stay in the
JSON under ``superseded``, with the commit they ran at, and the report gives their measure
beside the new one; their run folders are renamed ``<seed>-<commit>``.

Greedy success of BK's runs: its log keeps only the evaluation's mean return R and mean
length L over its N = 50 episodes. On these levels an episode either succeeds with reward
1 - 0.9 l / M (M = 400 steps, room size squared) or runs out at M steps with reward 0, so the
number of successes is exactly n = 10 N (R - 0.9 (1 - L / M)); a value that is not a whole
number (a broken assumption) is reported.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
NAME = "bk-reference-check"
RESULTS_DIR = ROOT / "bench" / "results"
RUNS_ROOT = ROOT / "bench" / "runs"
BK_SRC = RUNS_ROOT / "bk-src"
BK_ENV = RUNS_ROOT / "bk-env"
BK_READY = BK_ENV / "rl-bk-ready.json"

TASK = "babyai-gotolocal-redball-s20"  # rl-bk's task file (tune_configs/)
BK_ENV_ID = "BabyAI-Text-GoToLocal-RedBall-S20"  # the same level in BK's registry
SEEDS = [0, 1, 2]
STEPS = 300_000
EVERY = 20_000  # BK's eval_freq default; rl-bk's task evaluates as often
EPISODES = 50  # BK's num_eval_episodes default
MAX_STEPS = 400  # the level's time limit: room size 20, squared (BabyAI's RoomGridLevel)
IMPLEMENTATIONS = {"bk": "BK's train_rs.py", "rl-bk": "rl-bk (tune_run.py)"}
POTENTIALS = {"oracle": "ORACLE task-agnostic BK-Code potential", "zero": "zero potential"}
#: BK's window: reward_model_horizon (5, its default) past states and the current one.
BK_WINDOW = 6
#: Transitions of the check each run session starts with (--check-port N for a longer one).
QUICK_CHECK = 2000

#: What train_rs.py imports for BabyAI, beside BK's own minigrid and Crafter packages. torch is
#: pinned: unpinned, PyPI's Linux wheel is the multi-GB CUDA build (here a local CPU wheel of
#: this version is found first). gymnasium 0.29: BK's code uses its wrapper module paths and
#: same-step autoreset (1.x moved both); numpy<2 for that gymnasium.
BK_PACKAGES = [
    "torch==2.13.0",
    "numpy<2",
    "gymnasium==0.29.1",
    "tensorboardX",
    "wandb",
    "moviepy<2",
    "transformers",
]


class CheckError(RuntimeError):
    """Something a user can fix; main() prints it in one line and exits non-zero."""


# ------------------------------------------------------------------------------ output paths
@dataclass(frozen=True)
class Output:
    """Where one check writes: the plan's results (committed) or a smoke run's."""

    name: str
    results: Path  # results folder (the .md, .json and .png)
    runs: Path  # runs, task files, potentials

    @property
    def json(self) -> Path:
        return self.results / f"{self.name}.json"

    @property
    def md(self) -> Path:
        return self.results / f"{self.name}.md"

    @property
    def png(self) -> Path:
        return self.results / f"{self.name}.png"


def output_for(steps: int, seeds: list[int], name: str | None = None) -> Output:
    """The plan writes to bench/results/; anything else (a smoke run) under bench/runs/."""
    if name is None and steps == STEPS and seeds == SEEDS:
        return Output(NAME, RESULTS_DIR, RUNS_ROOT / NAME)
    name = name or f"{NAME}-smoke"
    if name == NAME:
        raise CheckError(
            f"--out {NAME} is the plan's results: use another name with "
            "--steps/--seeds other than the plan's"
        )
    return Output(name, RUNS_ROOT / name / "results", RUNS_ROOT / name)


# ------------------------------------------------------------------------------ BK's source
def _git(repo: Path, *args: str, binary: bool = False) -> subprocess.CompletedProcess:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=not binary)


def bk_commit(repo: Path) -> str:
    """The commit of BK's clone (normal or bare), or a clear error."""
    if not repo.exists():
        raise CheckError(
            f"--bk-repo {repo} does not exist: pass a clone of "
            "github.com/mansicer/background-knowledge-rl"
        )
    head = _git(repo, "rev-parse", "HEAD")
    if head.returncode != 0:
        raise CheckError(
            f"--bk-repo {repo} is not a git repository with a commit "
            f"({head.stderr.strip()}): pass a clone of "
            "github.com/mansicer/background-knowledge-rl"
        )
    if _git(repo, "cat-file", "-e", "HEAD:train_rs.py").returncode != 0:
        raise CheckError(
            f"--bk-repo {repo} has no train_rs.py at HEAD: is it BK's repository "
            "(github.com/mansicer/background-knowledge-rl)?"
        )
    return head.stdout.strip()


def export_bk_source(repo: Path, dest: Path = BK_SRC) -> dict:
    """BK's HEAD, as committed, in ``dest`` (a normal clone's uncommitted changes are left
    out). Every file is read from git, so a bare clone works; a blob missing from a partial
    clone is skipped if it is not code (BK's figures), else an error. Re-exports only when the
    commit changed. Returns {"commit", "missing"}."""
    commit = bk_commit(Path(repo))
    stamp = dest / ".rl-bk-export.json"
    if stamp.is_file() and json.loads(stamp.read_text()).get("commit") == commit:
        return json.loads(stamp.read_text())
    listing = _git(repo, "ls-tree", "-r", "-z", "HEAD")
    if listing.returncode != 0:
        raise CheckError(f"cannot list BK's files in {repo}: {listing.stderr.strip()}")
    entries = []
    for item in listing.stdout.split("\0"):
        if item:
            meta, path = item.split("\t", 1)
            mode, kind, sha = meta.split()
            entries.append((mode, kind, sha, path))
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    missing = []
    for mode, kind, sha, path in entries:
        if kind != "blob":
            continue  # submodules: BK has none
        blob = _git(repo, "cat-file", "blob", sha, binary=True)
        target = dest / path
        if blob.returncode != 0:
            if path.endswith((".py", ".txt", ".toml", ".cfg", ".yaml", ".yml", ".sh")):
                raise CheckError(
                    f"BK's {path} is missing from {repo} (a partial clone?): "
                    "clone the repository again in full"
                )
            missing.append(path)
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        if mode == "120000":
            target.symlink_to(blob.stdout.decode())
        else:
            target.write_bytes(blob.stdout)
            if mode == "100755":
                target.chmod(0o755)
    facts = {"commit": commit, "source": str(repo), "missing": missing}
    stamp.write_text(json.dumps(facts, indent=2))
    return facts


def exported_bk() -> dict | None:
    stamp = BK_SRC / ".rl-bk-export.json"
    return json.loads(stamp.read_text()) if stamp.is_file() else None


def bk_python() -> Path:
    return BK_ENV / "bin" / "python"


#: Run in BK's environment from BK's source folder: imports what train_rs.py imports (an
#: import check) and prints the package versions and BK's default arguments for bk-code on
#: BabyAI (utils/config.py), as JSON.
_BK_INFO = r"""
import argparse, json, sys  # run with -c from BK's folder: it is importable
import train_rs  # noqa: F401  (every import of BK's script, minigrid and crafter included)
from utils import config
p = argparse.ArgumentParser()
config.add_exp_arguments(p)
config.add_minigrid_arguments(p)
config.add_ppo_arguments(p)
config.add_coding_reward_arguments(p)
defaults = vars(p.parse_args(["--pretrain_path", "-"]))
del defaults["pretrain_path"]
from importlib.metadata import version
names = ["torch", "numpy", "gymnasium", "minigrid", "crafter", "tensorboardX", "wandb",
         "moviepy", "transformers"]
print(json.dumps({"python": sys.version.split()[0], "packages": {n: version(n) for n in names},
                  "defaults": defaults}))
"""


def bk_run_env() -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        WANDB_MODE="disabled",
        WANDB_SILENT="true",
        HF_HUB_OFFLINE="1",
        TOKENIZERS_PARALLELISM="false",
        PYTHONUNBUFFERED="1",
        PYTHONDONTWRITEBYTECODE="1",
    )
    env.pop("PYTHONPATH", None)
    env.pop("VIRTUAL_ENV", None)
    return env


def setup_bk_env(repo: Path) -> dict:
    """BK's source exported and its own virtual environment made (again); returns what the
    environment holds. The pip output goes to ``bench/runs/bk-env-setup.log``."""
    exported = export_bk_source(repo)
    log = RUNS_ROOT / "bk-env-setup.log"
    if BK_ENV.exists():
        shutil.rmtree(BK_ENV)
    steps = [
        [sys.executable, "-m", "venv", str(BK_ENV)],
        [str(bk_python()), "-m", "pip", "install", *BK_PACKAGES],
        [str(bk_python()), "-m", "pip", "install", "-e", str(BK_SRC / "minigrid_text")],
        # crafter_text/__init__.py imports its sibling text_env.py as a top-level module:
        # setuptools' "compat" editable mode puts the folder itself on the path (a .pth file).
        [
            str(bk_python()),
            "-m",
            "pip",
            "install",
            "-e",
            str(BK_SRC / "crafter_text"),
            "--config-settings",
            "editable_mode=compat",
        ],
    ]
    with log.open("w") as out:
        for cmd in steps:
            print(f"[{NAME}] {' '.join(cmd)}", flush=True)
            out.write(f"$ {' '.join(cmd)}\n")
            out.flush()
            if subprocess.run(cmd, stdout=out, stderr=subprocess.STDOUT).returncode != 0:
                raise CheckError(
                    f"setting up BK's environment failed at `{' '.join(cmd)}`: "
                    f"see {log.relative_to(ROOT)}, fix it, then run "
                    "--setup-bk-env again"
                )
    info = _bk_env_probe()
    info["bk_commit"] = exported["commit"]
    BK_READY.write_text(json.dumps(info, indent=2))
    return info


def _bk_env_probe() -> dict:
    probe = subprocess.run(
        [str(bk_python()), "-c", _BK_INFO],
        cwd=BK_SRC,
        capture_output=True,
        text=True,
        env=bk_run_env(),
    )
    if probe.returncode != 0:
        tail = "\n".join(probe.stderr.strip().splitlines()[-8:])
        raise CheckError(
            f"BK's environment cannot import train_rs.py:\n{tail}\nrun "
            "--setup-bk-env again (or install what is missing into "
            f"{BK_ENV.relative_to(ROOT)})"
        )
    return json.loads(probe.stdout.strip().splitlines()[-1])


def require_bk(repo: Path | None) -> dict:
    """BK's source (exported from ``repo`` if given) and environment, ready; else a clear
    error saying what to run."""
    if repo is not None:
        export_bk_source(repo)
    exported = exported_bk()
    if exported is None:
        raise CheckError(
            "BK's source is not exported yet: pass --bk-repo PATH (a clone of "
            "github.com/mansicer/background-knowledge-rl)"
        )
    if not BK_READY.is_file() or not bk_python().is_file():
        raise CheckError(
            f"BK's environment is missing ({BK_ENV.relative_to(ROOT)}): run "
            "`python -m bench.bk_reference_check --bk-repo PATH --setup-bk-env`"
        )
    info = json.loads(BK_READY.read_text())
    return {**info, "bk_commit": exported["commit"]}


# ------------------------------------------------------------------------------ potentials
ZERO_POTENTIAL = """\
def compute_potential(window: list[dict]) -> float:
    # The zero potential (bench/bk_reference_check.py): shaping adds nothing.
    return 0.0
"""

_BK_FORMAT = '''\
# BK-format potential written by bench/bk_reference_check.py (rl-bk), not BK's code.
# BK's train_rs.py (--alg bk-code) loads this file after prompts/coding/code_header.py and calls
# compute_reward(cur_obs, past_obs, past_actions) on each state's window: cur_obs the current
# (3, 7, 7) observation of babyai_envs.wrappers.ImageObsWrapper (minigrid's encoded view,
# channels divided by 10, 5 and 3), past_obs the {past} states before it, past_actions the
# action taken in each. It returns rl-bk's compute_potential(window) below on the last
# {horizon} states of that window, captioned as rl-bk captions them (rl-bk's captioner, copied
# here; the carried object is the view's cell under the agent), as Phi.
# The file needs only numpy and minigrid (rl-bk's unit test runs it without BK's code).
import numpy as np

# ---- rl-bk's BabyAI captioner, env_registry/babyai/captioner.py ({captioner_sha})
{captioner}

# ---- the potential as rl-bk runs it, its code-final.py ({potential_sha})
{potential}

# ---- BK's arguments -> rl-bk's window
_PORT_SCALE = np.array([10.0, 5.0, 3.0]).reshape(3, 1, 1)
_PORT_ACTION_NAMES = {action_names!r}
_PORT_HORIZON = {horizon}
_PORT_NOT_HELD = (OBJECT_TO_IDX["unseen"], OBJECT_TO_IDX["empty"])


def port_image(obs):
    """BK's (3, 7, 7) observation -> minigrid's (7, 7, 3) encoded view, as integers."""
    scaled = np.asarray(obs, dtype=np.float64) * _PORT_SCALE
    return np.rint(scaled).astype(np.int64).transpose(1, 2, 0)


def port_caption(obs):
    """rl-bk's caption of the view; minigrid draws the carried object in the agent's cell."""
    image = port_image(obs)
    obj, color, _ = (int(v) for v in image[AGENT_X][AGENT_Y])
    held = None if obj in _PORT_NOT_HELD else (IDX_TO_COLOR[color], IDX_TO_OBJECT[obj])
    return caption_babyai(image, held)


def port_action(action):
    a = int(action)
    return _PORT_ACTION_NAMES[a] if 0 <= a < len(_PORT_ACTION_NAMES) else f"action {{a}}"


def port_window(cur_obs, past_obs, past_actions):
    """rl-bk's window records of BK's window: oldest first, the current state's action None."""
    records = [{{"caption": port_caption(o), "action": port_action(a)}}
               for o, a in zip(past_obs, past_actions)]
    records.append({{"caption": port_caption(cur_obs), "action": None}})
    return records[-_PORT_HORIZON:]


def compute_reward(cur_obs, past_obs, past_actions):
    return float(compute_potential(port_window(cur_obs, past_obs, past_actions))), {{}}
'''


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def captioner_source() -> str:
    """rl-bk's BabyAI captioner, as a block that runs after BK's code header (so without its
    ``from __future__`` line, which must come first in a file)."""
    import inspect

    from env_registry.babyai import captioner

    lines = inspect.getsource(captioner).splitlines()
    return "\n".join(ln for ln in lines if ln.strip() != "from __future__ import annotations")


def bk_format_code(potential: str, horizon: int) -> str:
    """A ``compute_potential(window)`` file of rl-bk as a ``compute_reward(cur_obs, past_obs,
    past_actions)`` file of BK (see the module)."""
    from env_registry.babyai.vocabulary import ACTION_NAMES

    captioner = captioner_source()
    return _BK_FORMAT.format(
        past=BK_WINDOW - 1,
        horizon=horizon,
        captioner=captioner,
        captioner_sha=f"sha256 {sha(captioner)}",
        potential=potential.rstrip(),
        potential_sha=f"sha256 {sha(potential)}",
        action_names=ACTION_NAMES,
    )


def oracle_potential(folder: Path) -> tuple[str, dict]:
    """rl-bk's ORACLE BK-Code potential for the task, built by rl-bk's knowledge pipeline
    (``build_knowledge``, oracle labeler, the task's BK-Code settings) into ``folder``.

    BK's setting withholds the mission, so the oracle writes its task-agnostic potential,
    which reads no data: the dataset the pipeline labels is made small (64 random-policy
    steps' worth of episodes instead of 200k RND steps); the code is the same."""
    from rl_bk.experiments.knowledge_pipeline import build_knowledge
    from rl_bk.experiments.task_config import load_task

    os.environ.setdefault("RLBK_LABEL_STORE", str(folder / "labels.sqlite3"))
    task = load_task(TASK)
    k = task.knowledge
    small = k.dataset.model_copy(update={"collector": "random", "episodes": 2, "collections": 1})
    task = task.model_copy(
        update={
            "knowledge": k.model_copy(
                update={"dataset": small, "backend": "oracle", "include_mission": False}
            )
        }
    )
    built = build_knowledge(task, "bk-code", "oracle", root=folder / "knowledge")
    meta = json.loads((built / "meta.json").read_text())
    return (built / "code-final.py").read_text(), {
        "labeler": meta.get("labeler"),
        "is_oracle": meta.get("is_oracle"),
        "mission": meta.get("mission"),
        "horizon": meta.get("horizon"),
    }


def write_potentials(out: Output) -> dict[str, dict]:
    """Both potentials in both formats under ``<runs>/potentials/<name>/``: ``rl-bk.py``
    (rl-bk's ``knowledge.code.path``) and ``bk/code-final.py`` (BK's ``--pretrain_path``)."""
    from rl_bk.experiments.task_config import load_task

    horizon = load_task(TASK).knowledge.code.horizon
    oracle, facts = oracle_potential(out.runs / "potentials" / "oracle-build")
    out_facts = {}
    for name, code, extra in (("oracle", oracle, facts), ("zero", ZERO_POTENTIAL, {})):
        folder = out.runs / "potentials" / name
        (folder / "bk").mkdir(parents=True, exist_ok=True)
        bk_code = bk_format_code(code, horizon)
        (folder / "rl-bk.py").write_text(code)
        (folder / "bk" / "code-final.py").write_text(bk_code)
        out_facts[name] = {
            "rl_bk_sha256": sha(code),
            "bk_sha256": sha(bk_code),
            "horizon": horizon,
            **extra,
        }
    return out_facts


def potential_paths(out: Output, name: str) -> tuple[Path, Path]:
    """(rl-bk's file, BK's --pretrain_path folder) of a potential."""
    folder = out.runs / "potentials" / name
    return folder / "rl-bk.py", folder / "bk"


# ------------------------------------------------------------------------------ the port check
def load_function(code: str, name: str):
    """``name`` from code run in a namespace of its own (the way BK and rl-bk's sandbox load it)."""
    namespace: dict[str, Any] = {"__name__": f"bk_reference_check_{name}"}
    exec(compile(code, f"<{name}>", "exec"), namespace)
    return namespace[name]


def bk_obs(image) -> Any:
    """What BK's ImageObsWrapper makes of minigrid's (7, 7, 3) view: (3, 7, 7), / 10, 5, 3."""
    import numpy as np

    out = np.asarray(image).transpose(2, 0, 1).astype(np.float32)
    out[0] /= 10.0
    out[1] /= 5.0
    out[2] /= 3.0
    return out


def bk_slots(k: int, window: int = BK_WINDOW) -> list[int]:
    """BK's window of an episode's state ``k`` (train_rs.py's rolling buffer): slot ``j`` holds
    state ``max(0, k - window + 1 + j)`` and the action taken there; at an episode's start the
    buffer is filled with its first state and the first action, so state 0's window says the
    first action was taken before it."""
    return [max(0, k - window + 1 + j) for j in range(window)]


def records(captions: list[str], actions: list[int], slots: list[int], horizon: int) -> list[dict]:
    """rl-bk's window records (``window_records``' format) of the states at ``slots`` (the
    last is the current state), cut to the last ``horizon``."""
    from env_registry.babyai.vocabulary import ACTION_NAMES

    def name(a: int) -> str:
        return ACTION_NAMES[a] if 0 <= a < len(ACTION_NAMES) else f"action {a}"

    out = [{"caption": captions[s], "action": name(int(actions[s]))} for s in slots[:-1]]
    out.append({"caption": captions[slots[-1]], "action": None})
    return out[-horizon:]


@dataclass
class Episode:
    """States of one episode: minigrid's raw views, the carried object, the action taken."""

    images: list  # (7, 7, 3) integer views
    held: list  # (color, type) or None per state
    actions: list[int]
    captions: list[str] | None = None  # the env's own captions, where it gives them


def captions_of(episode: Episode) -> list[str]:
    from env_registry.babyai.captioner import caption_babyai

    return [caption_babyai(img, held) for img, held in zip(episode.images, episode.held)]


def reference_values(episodes: list[Episode], potential: str, horizon: int) -> dict[str, list]:
    """rl-bk's ``compute_potential`` on each state's window: ``bk``, BK's window (what the
    port must return), and ``rl_bk``, the window rl-bk builds at RL time (cut at the
    episode's start: the two differ only at episode starts)."""
    fn = load_function(potential, "compute_potential")
    bk, rl_bk, first = [], [], []
    for ep in episodes:
        caps = captions_of(ep)
        for k in range(len(caps)):
            bk.append(float(fn(records(caps, ep.actions, bk_slots(k), horizon))))
            own = list(range(max(0, k - horizon + 1), k + 1))
            rl_bk.append(float(fn(records(caps, ep.actions, own, horizon))))
            first.append(k == 0)
    return {"bk": bk, "rl_bk": rl_bk, "first": first}


def port_values(episodes: list[Episode], bk_code: str) -> list[float]:
    """The BK-format file's ``compute_reward`` on each state's BK window, in this process."""
    import numpy as np

    compute_reward = load_function(bk_code, "compute_reward")
    out = []
    for ep in episodes:
        obs = np.stack([bk_obs(img) for img in ep.images])
        for k in range(len(ep.images)):
            slots = bk_slots(k)
            acts = np.asarray([ep.actions[s] for s in slots], dtype=np.int64)
            out.append(float(compute_reward(obs[slots[-1]], obs[slots[:-1]], acts[:-1])[0]))
    return out


def agreement(port: list[float], reference: dict[str, list], tol: float = 1e-9) -> dict:
    """How many port values equal rl-bk's on BK's window, and how often BK's window and
    rl-bk's own give different potentials (expected at episode starts only)."""
    bad = [i for i, (a, b) in enumerate(zip(port, reference["bk"])) if abs(a - b) > tol]
    differ = [
        i for i, (a, b) in enumerate(zip(reference["bk"], reference["rl_bk"])) if abs(a - b) > tol
    ]
    return {
        "transitions": len(port),
        "agree": len(port) - len(bad),
        "disagree": bad[:20],
        "episode_starts": sum(reference["first"]),
        "window_differs": len(differ),
        "window_differs_at_episode_start": sum(reference["first"][i] for i in differ),
    }


def rl_path_values(
    episodes: list[Episode], potential: str, horizon: int, chunk_steps: int = 128
) -> list[float]:
    """The potential of each state as rl-bk's shaping term computes it in training: each
    episode cut into RLlib chunks of ``chunk_steps`` (one per train batch), the chunks of a
    batch through :class:`PotentialShaping`'s potentials (BK's padding at an episode's start,
    the history carried across cuts), with the BK-Code source rl-bk trains with."""
    import numpy as np
    from ray.rllib.env.single_agent_episode import SingleAgentEpisode

    from rl_bk.connectors.learner.episode_chunks import EpisodeChunk
    from rl_bk.methods.bk.code.potential import CodePotential
    from rl_bk.methods.bk.potential_shaping import PotentialShaping

    shaping = PotentialShaping(
        potential_fn=CodePotential(potential, family="babyai", horizon=horizon),
        gamma=0.99,
        normalization="none",
    )
    pieces: list[list] = []  # per episode, its chunks in order
    for ep in episodes:
        caps = list(ep.captions or captions_of(ep))  # a copy: one state is appended
        obs = [np.asarray(img, np.float32).reshape(-1) / 10 for img in ep.images]
        # One state more than the actions: the state after the last action (not valued).
        obs.append(obs[-1]), caps.append(caps[-1])
        sa = SingleAgentEpisode(
            observations=[obs[0]], infos=[{"caption": caps[0]}], len_lookback_buffer=0
        )
        chunks = []
        for t, a in enumerate(ep.actions):
            sa.add_env_step(
                obs[t + 1],
                a,
                0.0,
                infos={"caption": caps[t + 1]},
                terminated=t == len(ep.actions) - 1,
            )
            if len(sa) == chunk_steps and t < len(ep.actions) - 1:
                chunks.append(sa)
                sa = sa.cut()
        chunks.append(sa)
        pieces.append([c.to_numpy() for c in chunks])
    values: list[list[float]] = [[] for _ in episodes]
    for batch in range(max(len(p) for p in pieces)):
        here = [(i, p[batch]) for i, p in enumerate(pieces) if batch < len(p)]
        found = [EpisodeChunk(c, len(c), c.id_) for _, c in here]
        for (i, _), piece, phi in zip(here, found, shaping.raw_potentials(found)):
            values[i].extend(float(v) for v in phi[: piece.steps])
    return [v for per_episode in values for v in per_episode]


def random_episodes_rl_bk(n: int, seed: int = 0) -> list[Episode]:
    """``n`` states of random play in rl-bk's RedBall-S20, cut into episodes of random length
    (more episode starts than full episodes give), with the raw views (unit tests)."""
    import numpy as np

    import env_registry
    from rl_bk.experiments.task_config import load_task

    task = load_task(TASK)
    env = env_registry.make_env(task.env, task.env_config)
    rng = np.random.default_rng(seed)
    episodes: list[Episode] = []
    total = 0
    try:
        while total < n:
            obs, info = env.reset(seed=int(rng.integers(1 << 30)))
            ep = Episode([], [], [], [])
            limit = int(rng.integers(1, 120))
            while True:
                level = env.unwrapped.level
                ep.images.append(np.rint(obs[:147].reshape(7, 7, 3) * 10).astype(np.int64))
                c = level.carrying
                ep.held.append((c.color, c.type) if c is not None else None)
                ep.captions.append(info["caption"])
                a = int(rng.integers(env.action_space.n))
                ep.actions.append(a)
                total += 1
                obs, _, term, trunc, info = env.step(a)
                if term or trunc or len(ep.images) >= limit or total >= n:
                    break
            episodes.append(ep)
    finally:
        env.close()
    return episodes


#: Run in BK's environment from BK's source folder: random play in BK's env (its own
#: make_minigrid_env), each state's BK window built as train_rs.py builds it, the values from
#: BK's own loader (CodingReward: code header + code-final.py). Saves what rl-bk needs to
#: compute the reference: raw views, carried objects, actions, episode ids, BK's observations.
_BK_DRIVER = r"""
import sys
from types import SimpleNamespace
import numpy as np
import torch  # run with -c from BK's folder: it is importable
from utils.env_maker import make_minigrid_env
from models.reward_provider import CodingReward

potential_dir, n, seed, out, env_id, window = sys.argv[1:7]
n, seed, window = int(n), int(seed), int(window)
args = SimpleNamespace(pretrain_path=potential_dir, reward_model_horizon=window - 1)
provider = CodingReward(args, torch.device("cpu"))
env = make_minigrid_env(env_id, seed=seed, image_only=False)()
level = env.unwrapped
rng = np.random.default_rng(seed)
images, held, actions, episode, step, observations, limits = [], [], [], [], [], [], []
obs, _ = env.reset(seed=seed)
ep, k, limit = 0, 0, int(rng.integers(1, 120))
while len(images) < n:
    images.append(level.gen_obs()["image"])
    c = level.carrying
    held.append("" if c is None else f"{c.color} {c.type}")
    observations.append(np.asarray(obs["image"], dtype=np.float32))
    a = int(rng.integers(env.action_space.n))
    actions.append(a); episode.append(ep); step.append(k)
    obs, _, terminated, truncated, _ = env.step(a)
    k += 1
    if terminated or truncated or k >= limit:
        limits.append(level.max_steps)
        obs, _ = env.reset()
        ep, k, limit = ep + 1, 0, int(rng.integers(1, 120))
step = np.asarray(step)
start = np.arange(len(step)) - step
slots = start[:, None] + np.maximum(0, step[:, None] - window + 1 + np.arange(window)[None, :])
obs_all, act_all = np.stack(observations), np.asarray(actions, dtype=np.int64)
values = []
for i in range(0, len(step), 2048):
    s = slots[i : i + 2048]
    w_obs, w_act = torch.from_numpy(obs_all[s]), torch.from_numpy(act_all[s])
    values.append(provider.compute_reward(w_obs, w_act, torch.zeros_like(w_act), None).numpy())
np.savez(out, images=np.stack(images).astype(np.int64), held=np.array(held), actions=act_all,
         episode=np.asarray(episode), values=np.concatenate(values).astype(np.float64),
         observations=obs_all, max_steps=np.asarray(limits + [level.max_steps]))
"""


def check_port(out: Output, potential: str, n: int, seed: int = 0) -> dict:
    """The BK-format ``potential`` in BK's environment with BK's loader, against rl-bk's
    function on the same windows (see the module); a CheckError if any value disagrees."""
    import numpy as np

    rl_file, bk_dir = potential_paths(out, potential)
    folder = out.runs / "check-port"
    folder.mkdir(parents=True, exist_ok=True)
    data = folder / f"{potential}-{n}-{seed}.npz"
    started = time.time()
    run = subprocess.run(
        [
            str(bk_python()),
            "-c",
            _BK_DRIVER,
            str(bk_dir.resolve()),
            str(n),
            str(seed),
            str(data.resolve()),
            BK_ENV_ID,
            str(BK_WINDOW),
        ],
        cwd=BK_SRC,
        capture_output=True,
        text=True,
        env=bk_run_env(),
    )
    if run.returncode != 0:
        tail = "\n".join(run.stderr.strip().splitlines()[-12:])
        raise CheckError(f"the port check failed in BK's environment:\n{tail}")
    bk_seconds = time.time() - started
    d = np.load(data)
    episodes: list[Episode] = []
    for e in np.unique(d["episode"]):
        idx = np.flatnonzero(d["episode"] == e)
        held = [tuple(h.split(" ")) if h else None for h in d["held"][idx]]
        episodes.append(Episode(list(d["images"][idx]), held, [int(a) for a in d["actions"][idx]]))
    from rl_bk.experiments.task_config import load_task

    horizon = load_task(TASK).knowledge.code.horizon
    reference = reference_values(episodes, rl_file.read_text(), horizon)
    result = agreement(list(d["values"]), reference)
    # rl-bk's training path on the same states: chunks cut every 16 steps (more cuts than
    # training makes), BK's padding, the history carried across cuts.
    in_training = rl_path_values(episodes, rl_file.read_text(), horizon, chunk_steps=16)
    result["rl_path_agree"] = int(sum(abs(a - b) <= 1e-9 for a, b in zip(in_training, d["values"])))
    decoded = load_function((bk_dir / "code-final.py").read_text(), "port_image")
    result["views_decoded"] = int(
        sum(np.array_equal(decoded(o), i) for o, i in zip(d["observations"], d["images"]))
    )
    result["max_steps"] = sorted({int(m) for m in d["max_steps"]})
    result.update(
        potential=potential,
        seed=seed,
        seconds_in_bk_env=round(bk_seconds, 1),
        carried_states=int(sum(bool(h) for h in d["held"])),
    )
    print(
        f"[{NAME}] port check ({potential}): {result['agree']:,} of {result['transitions']:,} "
        f"transitions agree; views decoded {result['views_decoded']:,}/"
        f"{result['transitions']:,}; {result['carried_states']:,} states carrying; "
        f"{result['window_differs']} windows where BK's and rl-bk's own give different "
        f"potentials ({result['window_differs_at_episode_start']} at episode starts, "
        f"{result['episode_starts']} starts); rl-bk's training path agrees with BK's loader on "
        f"{result['rl_path_agree']:,}; time limits seen: {result['max_steps']}",
        flush=True,
    )
    if result["agree"] != result["transitions"]:
        i = result["disagree"][0]
        raise CheckError(
            f"the BK-format {potential} potential disagrees with rl-bk's on "
            f"{result['transitions'] - result['agree']} of {result['transitions']} "
            f"transitions (first: state {i}, port {d['values'][i]!r}, rl-bk "
            f"{reference['bk'][i]!r}); the port is wrong: do not run the check"
        )
    if result["rl_path_agree"] != result["transitions"]:
        raise CheckError(
            f"rl-bk's training path gives other potentials than BK's loader on "
            f"{result['transitions'] - result['rl_path_agree']} of "
            f"{result['transitions']} states (bench.bk_reference_check."
            "rl_path_values): rl-bk does not shape as BK does"
        )
    if result["views_decoded"] != result["transitions"]:
        raise CheckError(
            "BK's observations do not decode to minigrid's views on "
            f"{result['transitions'] - result['views_decoded']} states"
        )
    if result["max_steps"] != [MAX_STEPS]:
        raise CheckError(
            f"BK's env has time limits {result['max_steps']}, not {MAX_STEPS}: "
            "the success count derived from BK's log assumes it"
        )
    return result


# ------------------------------------------------------------------------------ BK's runs
_BLOCK = re.compile(r"Step (\d+) stats\n=+\n(.*?)\n=+", re.DOTALL)
_LINE = re.compile(r"^(\S+)\s+(\S+)$")


def parse_bk_console(text: str, episodes: int = EPISODES, max_steps: int = MAX_STEPS) -> list[dict]:
    """Each evaluation in BK's console.log: env steps, greedy success (derived, see the
    module), mean return and length, and BK's learner/SPS at that point."""
    evals = []
    for step, body in _BLOCK.findall(text):
        metrics = {}
        for line in body.splitlines():
            if m := _LINE.match(line.strip()):
                try:
                    metrics[m.group(1)] = float(m.group(2))
                except ValueError:
                    pass
        if "eval/episodic_return" not in metrics:
            continue
        ret, length = metrics["eval/episodic_return"], metrics["eval/episodic_length"]
        successes = 10 * episodes * (ret - 0.9 * (1 - length / max_steps))
        evals.append(
            {
                "env_steps": int(step),
                "success": round(successes) / episodes,
                "return": ret,
                "length": length,
                "success_residual": round(abs(successes - round(successes)), 4),
                "sps": metrics.get("learner/SPS"),
            }
        )
    return evals


def run_bk_part(out: Output, potential: str, seed: int, steps: int) -> dict:
    """BK's train_rs.py, unmodified, from BK's source folder with this part's folder as its
    working directory (its logs/ go there); an interrupted part starts again."""
    part_dir = out.runs / "bk" / potential / str(seed)
    if part_dir.exists():
        shutil.rmtree(part_dir)
    part_dir.mkdir(parents=True)
    (part_dir / "prompts").symlink_to(BK_SRC.resolve() / "prompts")  # its code header
    _, bk_dir = potential_paths(out, potential)
    cmd = [
        str(bk_python()),
        str(BK_SRC.resolve() / "train_rs.py"),
        "--alg",
        "bk-code",
        "--pretrain_path",
        str(bk_dir.resolve()),
        "--env",
        BK_ENV_ID,
        "--seed",
        str(seed),
        "--total_timesteps",
        str(steps),
    ]
    (part_dir / "command.txt").write_text(" ".join(cmd) + "\n")
    started = time.time()
    with (part_dir / "train_rs.out").open("w") as log:
        proc = subprocess.Popen(
            cmd, cwd=part_dir, stdout=log, stderr=subprocess.STDOUT, env=bk_run_env()
        )
        shown = 0
        while proc.poll() is None:
            time.sleep(10)
            shown = _show_progress(part_dir, f"bk/{potential}/{seed}", shown)
    consoles = sorted(part_dir.glob("logs/rl/*/*/console.log"))
    if proc.returncode != 0 or not consoles:
        tail = "\n".join((part_dir / "train_rs.out").read_text().strip().splitlines()[-15:])
        raise CheckError(
            f"BK's train_rs.py failed (exit {proc.returncode}) for "
            f"bk/{potential}/{seed}:\n{tail}\nsee {part_dir.relative_to(ROOT)}/"
            "train_rs.out; fix BK's environment (--setup-bk-env) and run again"
        )
    evals = parse_bk_console(consoles[-1].read_text())
    if not evals:
        raise CheckError(f"no evaluation in {consoles[-1]}: did train_rs.py's log format change?")
    sps = evals[-1]["sps"]
    return {
        "evals": evals,
        "env_steps_per_s": sps,
        "wall_s": round(time.time() - started, 1),
        "run_dir": _rel(consoles[-1].parent),
        "command": " ".join(cmd[1:]),
        "omp_num_threads": os.environ.get("OMP_NUM_THREADS"),
    }


def _show_progress(part_dir: Path, part: str, shown: int) -> int:
    consoles = sorted(part_dir.glob("logs/rl/*/*/console.log"))
    if not consoles:
        return shown
    evals = parse_bk_console(consoles[-1].read_text())
    for e in evals[shown:]:
        print(
            f"[{NAME}] {part}: {e['env_steps']:,} env steps, greedy success {e['success']:.2f}, "
            f"return {e['return']:.3f}, {e['sps'] or 0:.0f} env steps/s",
            flush=True,
        )
    return len(evals)


def _rel(path: Path) -> str:
    path = Path(path).resolve()
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


# ------------------------------------------------------------------------------ rl-bk's runs
def rl_bk_task_file(out: Output, potential: str, seed: int, steps: int) -> Path:
    """The task a user would write: RedBall-S20 as ``tune_configs/`` has it (PPO, network,
    shaping, everything), BK-Code only with this potential as ``knowledge.code.path``, one
    seed, the budget and BK's evaluation. The dataset the pipeline still collects for a
    hand-written potential (which reads none) is made small."""
    import yaml

    tasks = out.runs / "tasks"
    tasks.mkdir(parents=True, exist_ok=True)
    path = tasks / f"{NAME}-{potential}-seed{seed}.yaml"
    base = ROOT / "tune_configs" / f"{TASK}.yaml"
    rl_file, _ = potential_paths(out, potential)
    every = EVERY if steps >= 2 * EVERY else max(1, steps // 2)
    task = {
        "extends": os.path.relpath(base, tasks),
        "description": f"{POTENTIALS[potential]} as a hand-written BK-Code potential "
        f"(bench/bk_reference_check.py)",
        "methods": ["bk-code"],
        "seeds": [seed],
        "stop": {"num_env_steps": steps},
        "budgets": [b for b in (100_000, 200_000, 300_000) if b <= steps] or [steps],
        "evaluation": {"every_env_steps": every, "episodes": EPISODES, "greedy": True},
        "sweep": {"bk-code": {"include_mission": [False]}},
        "knowledge": {
            "code": {"path": str(rl_file.resolve())},
            "dataset": {"collector": "random", "episodes": 2, "collections": 1},
        },
    }
    header = "# Written by bench/bk_reference_check.py: the rl-bk side of the BK reference check.\n"
    path.write_text(header + yaml.safe_dump(task, sort_keys=False))
    return path


def run_rl_bk_part(out: Output, potential: str, seed: int, steps: int) -> dict:
    """``python tune_run.py --task <file>`` (or ``--resume`` of this part's run), then its
    greedy evaluations and env steps/s from the run's results."""
    from bench.study import code_commit, find_run, is_finished

    task_file = rl_bk_task_file(out, potential, seed, steps)
    home = out.runs / "rl-bk" / potential / str(seed)
    run_dir = find_run(home)
    started_at = home / "started-at-commit"
    commit = code_commit()
    if (
        run_dir is not None
        and not is_finished(run_dir)
        and (not started_at.is_file() or started_at.read_text().strip() != commit)
    ):
        # An interrupted run of other code (a fix since): its checkpoints would mix the two.
        was = started_at.read_text().strip() if started_at.is_file() else "unknown"
        aside = home.with_name(f"{home.name}-interrupted-{was}")
        shutil.rmtree(aside, ignore_errors=True)
        home.rename(aside)
        print(
            f"[{NAME}] rl-bk/{potential}/{seed}: an interrupted run of other code moved to "
            f"{_rel(aside)}; starting afresh",
            flush=True,
        )
        run_dir = None
    if is_finished(run_dir):
        cmd = None
    elif run_dir is not None and (run_dir / "tune").is_dir():
        cmd = [sys.executable, "tune_run.py", "--resume", str(run_dir)]
    else:
        cmd = [
            sys.executable,
            "tune_run.py",
            "--task",
            str(task_file),
            "--output-dir",
            str(home),
            "--knowledge-dir",
            str(out.runs / "knowledge"),
        ]
    started = time.time()
    if cmd is not None:
        home.mkdir(parents=True, exist_ok=True)
        if run_dir is None:
            started_at.write_text(commit + "\n")
        with (home / "tune_run.out").open("a") as log:
            log.write(f"$ {' '.join(cmd)}\n")
            log.flush()
            code = subprocess.run(cmd, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT).returncode
        run_dir = find_run(home)
        if code != 0 or not is_finished(run_dir):
            tail = "\n".join((home / "tune_run.out").read_text().strip().splitlines()[-15:])
            raise CheckError(
                f"tune_run.py failed (exit {code}) for rl-bk/{potential}/{seed}:\n"
                f"{tail}\nsee {_rel(home)}/tune_run.out"
            )
    return {**read_rl_bk_run(run_dir), "wall_s": round(time.time() - started, 1)}


def read_rl_bk_run(run_dir: Path) -> dict:
    """Greedy evaluations (env steps, success, return, length) and env steps/s (env steps
    over the trial's time, evaluation included, as BK's SPS) of a one-trial run."""
    import yaml

    from rl_bk import metrics as M
    from rl_bk.experiments.results import fresh_evaluations, records_from_tune_dir

    records = records_from_tune_dir(run_dir / "tune")
    if len(records) != 1:
        raise CheckError(f"{run_dir} holds {len(records)} trials, not one")
    p = fresh_evaluations(records[0].progress)
    length_col = M.EVAL_PREFIX + M.EPISODE_LEN_MEAN
    evals = []
    if M.EVAL_SUCCESS_RATE in p:
        for _, row in p[p[M.EVAL_SUCCESS_RATE].notna()].iterrows():
            evals.append(
                {
                    "env_steps": int(row[M.ENV_STEPS]),
                    "success": float(row[M.EVAL_SUCCESS_RATE]),
                    "return": float(row.get(M.EVAL_RETURN_MEAN, math.nan)),
                    "length": float(row.get(length_col, math.nan)),
                }
            )
    steps, seconds = float(p[M.ENV_STEPS].iloc[-1]), float(p[M.TIME_TOTAL_S].iloc[-1])
    task = yaml.safe_load((run_dir / "task.yaml").read_text())
    settings = {k: task.get(k) for k in ("ppo", "model", "env_runners", "evaluation")}
    settings["shaping"] = {
        k: task.get("knowledge", {}).get(k)
        for k in (
            "extrinsic_coeff",
            "potential_normalization",
            "shaping_convention",
            "shaping_coeff",
        )
    }
    return {
        "evals": evals,
        "env_steps_per_s": steps / seconds if seconds > 0 else math.nan,
        "run_dir": _rel(run_dir),
        "label": records[0].label,
        "settings": settings,
    }


# ------------------------------------------------------------------------------ the report
def parts(seeds: list[int]) -> list[str]:
    """Part ids ``<implementation>/<potential>/<seed>``, in the order they run: seed by seed,
    each potential on both implementations, so a partial check already compares."""
    return [
        f"{impl}/{pot}/{seed}" for seed in seeds for pot in POTENTIALS for impl in IMPLEMENTATIONS
    ]


def select_parts(all_parts: list[str], wanted: str | None) -> list[str]:
    """Parts matching any comma-separated prefix (``bk``, ``rl-bk/zero``, ``bk/oracle/1``)."""
    if not wanted:
        return all_parts
    prefixes = [w.strip().strip("/").split("/") for w in wanted.split(",") if w.strip()]
    chosen = [p for p in all_parts if any(p.split("/")[: len(w)] == w for w in prefixes)]
    if not chosen:
        raise CheckError(f"--parts {wanted} matches none of: {', '.join(all_parts)}")
    return chosen


def _grid(steps: int) -> tuple[list[int], int]:
    every = EVERY if steps >= 2 * EVERY else max(1, steps // 2)
    return list(range(every, steps + 1, every)), every


def _at(evals: list[dict], budget: int, every: int, key: str) -> float:
    """The evaluation nearest to ``budget`` env steps, within half an interval; NaN if none."""
    near = [e for e in evals if abs(e["env_steps"] - budget) <= every / 2]
    if not near:
        return math.nan
    return float(min(near, key=lambda e: abs(e["env_steps"] - budget))[key])


def _cell(values: list[float]) -> str:
    from bench.study import mean_sd

    return mean_sd(values) if values else "–"


def _plan(facts: dict) -> list[str]:
    _, every = _grid(facts["steps"])
    pots = facts.get("potentials", {})
    bk = facts.get("bk_env") or {}
    lines = [
        "# BK reference check: rl-bk against BK's own code",
        "",
        f"`{facts['command']}` (started {facts['date']}, {facts['machine']}). Written by "
        "`bench/bk_reference_check.py`; the plan below was fixed before the first run.",
        "",
        "**Question.** Given the same potential, do BK's `train_rs.py` and rl-bk learn "
        "BabyAI-Text GoToLocal-RedBall-S20 alike (greedy success and return against env "
        "steps), and how fast does each run?",
        "",
        "## Plan",
        "",
        f"- Runs: {{BK's `train_rs.py` (unmodified, its defaults), rl-bk (`tune_run.py`, the "
        f"task file `tune_configs/{TASK}.yaml` as it stands, BK-Code only)}} x {{ORACLE, "
        f"ZERO}} x seeds {facts['seeds']}, {facts['steps']:,} env steps each: "
        f"{2 * 2 * len(facts['seeds'])} parts.",
        "- ORACLE: rl-bk's task-agnostic BK-Code potential as its knowledge pipeline writes it "
        "(oracle labeler, mission withheld), in rl-bk's format (`knowledge.code.path`) and, "
        "for BK, ported to `compute_reward(cur_obs, past_obs, past_actions)` (rl-bk's "
        "captioner and the same function, copied into BK's `code-final.py`). ZERO: "
        "Phi = 0 in both (PPO on 10 x the env reward).",
        f"- Metric: greedy evaluation, {facts['episodes']} episodes every {every:,} env "
        "steps (BK's protocol in both). rl-bk reports the success rate; BK's log keeps the "
        "mean return R and length L only, from which the successes are exact: "
        f"n = 10 N (R - 0.9 (1 - L / {MAX_STEPS})) (a failure runs out at {MAX_STEPS} steps "
        "with reward 0). Table: mean ± std over seeds at each budget (the evaluation nearest "
        "to it, within half an interval; BK evaluates after its first update, then whenever "
        "20,000 env steps have passed since the last evaluation and after its last update; "
        "rl-bk every round(20,000 / train batch) updates), and each one's last evaluation.",
        "- Speed: env steps/s over the whole run, evaluation included (BK's `learner/SPS` at "
        "its last evaluation; rl-bk's env steps over the trial's time).",
        f"- Code: rl-bk `{facts.get('rl_bk_commit', 'unknown')}`; BK "
        f"`{facts.get('bk_commit', 'unknown')}` (github.com/mansicer/background-knowledge-rl),"
        f" in its own environment: Python {bk.get('python', '?')}, "
        + ", ".join(f"{k} {v}" for k, v in (bk.get("packages") or {}).items())
        + ".",
    ]
    for name, p in pots.items():
        lines.append(
            f"- Potential {name}: rl-bk file sha256 `{p['rl_bk_sha256']}`, BK file "
            f"sha256 `{p['bk_sha256']}`, window of {p['horizon']} states"
            + (f", labeler {p['labeler']}" if p.get("labeler") else "")
            + "."
        )
    if check := facts.get("port_check"):
        lines.append(
            f"- Port check (BK's loader in BK's env vs rl-bk's function, random play): "
            f"{check['agree']:,} of {check['transitions']:,} transitions agree; "
            f"{check['window_differs']} of them differ between BK's window and rl-bk's own "
            f"({check['window_differs_at_episode_start']} at episode starts, of "
            f"{check['episode_starts']})"
            + (
                f"; rl-bk's training path (its shaping term's potentials on the same states, "
                f"cut into chunks of 16 steps) agrees with BK's loader on "
                f"{check['rl_path_agree']:,}"
                if "rl_path_agree" in check
                else ""
            )
            + "."
        )
    lines += ["", *_settings_table(facts), ""]
    return lines


#: BK's argument -> what rl-bk's task file calls it (ppo: section, or a dotted path).
_SETTING_NAMES = [
    ("learning_rate", "ppo.lr"),
    ("gamma", "ppo.gamma"),
    ("gae_lambda", "ppo.lambda_"),
    ("clip_coef", "ppo.clip_param"),
    ("ent_coef", "ppo.entropy_coeff"),
    ("vf_coef", "ppo.vf_loss_coeff"),
    ("max_grad_norm", "ppo.grad_clip"),
    ("update_epochs", "ppo.num_epochs"),
    ("num_envs x num_steps", "ppo.train_batch_size_per_learner"),
    ("batch / num_minibatches", "ppo.minibatch_size"),
    ("ext_coef", "shaping.extrinsic_coeff"),
    ("eval_freq", "evaluation.every_env_steps"),
    ("num_eval_episodes", "evaluation.episodes"),
]


def _settings_table(facts: dict) -> list[str]:
    """BK's defaults beside the rl-bk task's settings (as the task file said when the plan
    was written); every other rl-bk setting below the table."""
    bk = (facts.get("bk_env") or {}).get("defaults") or {}
    rl = facts.get("rl_bk_settings") or {}
    if not bk and not rl:
        return []

    def bk_value(name: str) -> Any:
        if name == "num_envs x num_steps":
            return bk["num_envs"] * bk["num_steps"] if bk else "?"
        if name == "batch / num_minibatches":
            return bk["num_envs"] * bk["num_steps"] // bk["num_minibatches"] if bk else "?"
        return bk.get(name, "?")

    def rl_value(path: str) -> Any:
        section, key = path.split(".")
        return (rl.get(section) or {}).get(key, "?")

    lines = [
        "Settings (BK: its `utils/config.py` defaults for bk-code on BabyAI; rl-bk: the "
        "task file when the plan was written; each part keeps what it ran):",
        "",
        "| BK | value | rl-bk | value |",
        "|---|---|---|---|",
    ]
    used = set()
    for b, r in _SETTING_NAMES:
        used.add(r)
        lines.append(f"| `{b}` | {bk_value(b)} | `{r}` | {rl_value(r)} |")
    others = {
        f"{s}.{k}": v
        for s in ("ppo", "model", "env_runners", "evaluation", "shaping")
        for k, v in (rl.get(s) or {}).items()
    }
    rest = ", ".join(f"`{k}` {v}" for k, v in others.items() if k not in used)
    bk_rest = ", ".join(
        f"`{k}` {v}"
        for k, v in bk.items()
        if k in ("anneal_lr", "norm_adv", "clip_vloss", "target_kl", "reward_model_horizon")
    )
    lines += ["", f"Other BK defaults: {bk_rest or '?'}.", f"Other rl-bk settings: {rest or '?'}."]
    return lines


def _area_lines(mine: dict[str, list[dict]], steps: int, every: int) -> list[str]:
    """The primary measure of the BK study on this check: each run's mean greedy success over
    its evaluations from ``every`` / 2 env steps to the budget (BK's evaluation after its
    first update is left out: rl-bk has none there), per implementation, and rl-bk minus BK
    with Welch's 95% t interval (unpaired: the two seed their RNGs their own way)."""
    from bench.learning_measures import (
        curve_points,
        interval_text,
        normalised_area,
        signed,
        unpaired_difference,
    )

    areas: dict[str, dict[int, float]] = {}
    for impl, runs in mine.items():
        areas[impl] = {}
        for f in runs:
            evals = [e for e in f["evals"] if e["env_steps"] >= every / 2]
            area = normalised_area(
                curve_points([e["env_steps"] for e in evals], [e["success"] for e in evals]),
                steps,
                tolerance=every,
            )
            areas[impl][f["seed"]] = area.value if area.complete else math.nan
    if not all(areas.values()):
        return []
    d = unpaired_difference(areas["rl-bk"].values(), areas["bk"].values())
    per_seed = "; ".join(
        f"{IMPLEMENTATIONS[i]} " + ", ".join(f"{v:.3f}" for _, v in sorted(a.items()))
        for i, a in areas.items()
    )
    return [
        f"Mean greedy success over every evaluation up to {steps:,} env steps (per seed: "
        f"{per_seed}): BK {_cell(list(areas['bk'].values()))}, rl-bk "
        f"{_cell(list(areas['rl-bk'].values()))}; rl-bk minus BK {signed(d.mean)}, "
        f"Welch's 95% t interval {interval_text(d)}.",
        "",
    ]


def _superseded(facts: dict, potential: str) -> list[dict]:
    """The latest earlier rl-bk record of each of this potential's parts (``--rerun``)."""
    return [
        records[-1]
        for part, records in sorted(facts.get("superseded", {}).items())
        if part.split("/")[1] == potential and records
    ]


def supersede(out: Output, facts: dict, finished: dict[str, dict], chosen: list[str]) -> None:
    """Moves the finished rl-bk parts among ``chosen`` out of ``finished`` (into
    ``facts["superseded"]``) and their run folders aside, so that they run again."""
    for part in [c for c in chosen if c.startswith("rl-bk/") and c in finished]:
        record = finished.pop(part)
        facts.setdefault("superseded", {}).setdefault(part, []).append(record)
        _, pot, seed = part.split("/")
        home = out.runs / "rl-bk" / pot / seed
        if home.is_dir():
            home.rename(home.with_name(f"{seed}-{record.get('commit', 'earlier')}"))
        print(
            f"[{NAME}] {part}: earlier record (rl-bk `{record.get('commit')}`) superseded",
            flush=True,
        )


def _pooled_lines(facts: dict, finished: dict[str, dict]) -> list[str]:
    """The primary measure over the plan's seeds and those of other runs of this check
    (``--pool NAME,...``: each ``--out NAME`` run with other ``--seeds``), per potential."""
    names, pooled = facts.get("pool") or [], facts.get("pooled_parts") or {}
    if not names or not pooled:
        return []
    every = _grid(facts["steps"])[1]
    parts_seen = {**pooled, **finished}  # the plan's own parts where both have one
    lines = [
        "### Every seed run so far",
        "",
        f"The plan's seeds pooled with the runs of this check on other seeds "
        f"({', '.join(f'`--out {n}`' for n in names)}; same steps, same potentials, "
        f"same evaluation). Seeds were added, none dropped.",
        "",
    ]
    for pot, title in POTENTIALS.items():
        mine = {
            impl: [f for p, f in parts_seen.items() if p.startswith(f"{impl}/{pot}/")]
            for impl in IMPLEMENTATIONS
        }
        area = _area_lines(mine, facts["steps"], every)
        if area:
            lines += [f"- {title}: " + area[0]]
    return [*lines, ""]


def write_report(out: Output, facts: dict, finished: dict[str, dict]) -> None:
    from bench.study import write_keeping_reading

    out.results.mkdir(parents=True, exist_ok=True)
    grid, every = _grid(facts["steps"])
    lines = [*_plan(facts), "## Results", ""]
    for pot, title in POTENTIALS.items():
        lines += [f"### {title} ({pot})", ""]
        mine = {
            impl: [f for p, f in finished.items() if p.startswith(f"{impl}/{pot}/")]
            for impl in IMPLEMENTATIONS
        }
        if not any(mine.values()):
            lines += ["Not run yet.", ""]
            continue
        seeds = {impl: sorted(f["seed"] for f in fs) for impl, fs in mine.items()}
        lines += [
            f"Seeds finished: BK {seeds['bk'] or 'none'}, rl-bk {seeds['rl-bk'] or 'none'}.",
            "",
            "| env steps | BK success | rl-bk success | BK return | rl-bk return |",
            "|---|---|---|---|---|",
        ]
        for b in grid:
            cells = [
                _cell(
                    [v for f in mine[impl] if not math.isnan(v := _at(f["evals"], b, every, key))]
                )
                for key in ("success", "return")
                for impl in IMPLEMENTATIONS
            ]
            lines.append(f"| {b:,} | " + " | ".join(cells) + " |")
        last = []
        for key in ("success", "return"):
            for impl in IMPLEMENTATIONS:
                ends = [f["evals"][-1] for f in mine[impl] if f["evals"]]
                at = sorted({e["env_steps"] for e in ends})
                where = f" (at {', '.join(f'{s / 1000:.1f}k' for s in at)})" if at else ""
                last.append(_cell([e[key] for e in ends]) + (where if key == "success" else ""))
        lines.append("| last | " + " | ".join(last) + " |")
        sps = {
            impl: [f["env_steps_per_s"] for f in fs if f.get("env_steps_per_s")]
            for impl, fs in mine.items()
        }
        lines += [
            "",
            "Env steps/s (whole run, evaluation included): "
            + "; ".join(f"{IMPLEMENTATIONS[i]} {_cell(v)}" for i, v in sps.items())
            + ".",
            "",
        ]
        lines += _area_lines(mine, facts["steps"], every)
        earlier = _superseded(facts, pot)
        area = _area_lines({"bk": mine["bk"], "rl-bk": earlier}, facts["steps"], every)
        if area:
            commits = ", ".join(sorted({f"`{f.get('commit')}`" for f in earlier}))
            lines += [f"Superseded (rl-bk before the last fix, at {commits}): " + area[0], ""]
        residual = max(
            (e.get("success_residual", 0) for f in mine["bk"] for e in f["evals"]), default=0
        )
        if residual > 0.2:
            lines += [
                f"Warning: a BK success count was {residual} from a whole number: the "
                "derivation's assumption does not hold for some evaluation.",
                "",
            ]
    if plot(out, finished, facts):
        lines += [
            f"Curves: `{out.png.name}` (greedy success and return against env steps, "
            "mean over seeds, band = min..max).",
            "",
        ]
    commits = sorted({f"{f['implementation']} `{f.get('commit')}`" for f in finished.values()})
    if commits:
        lines += [
            f"Code the parts ran at: {', '.join(commits)}. Runs (not committed): "
            f"`{_rel(out.runs)}/<implementation>/<potential>/<seed>/`.",
            "",
        ]
    ran = {
        json.dumps(f["settings"], sort_keys=True)
        for f in finished.values()
        if f["implementation"] == "rl-bk" and "settings" in f
    }
    if len(ran) > 1:
        lines += [
            "Warning: rl-bk's parts ran with different settings (the task file changed "
            "during the check); each part's are in the JSON.",
            "",
        ]
    lines += _pooled_lines(facts, finished)
    todo = [p for p in parts(facts["seeds"]) if p not in finished]
    if todo:
        lines += [f"Still to run: {', '.join(todo)}.", ""]
    write_keeping_reading(out.md, "\n".join(lines))
    out.json.write_text(json.dumps({**facts, "finished": finished}, indent=2, default=float))


def plot(out: Output, finished: dict[str, dict], facts: dict) -> bool:
    """Greedy success and return against env steps, per potential, both implementations."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    if not finished:
        return False
    grid, every = _grid(facts["steps"])
    fig, axes = plt.subplots(2, len(POTENTIALS), figsize=(11, 7), squeeze=False)
    for col, (pot, title) in enumerate(POTENTIALS.items()):
        for row, key in enumerate(("success", "return")):
            ax = axes[row][col]
            curves = [
                (
                    label,
                    [
                        f["evals"]
                        for p, f in finished.items()
                        if p.startswith(f"{impl}/{pot}/") and f["evals"]
                    ],
                    "-",
                )
                for impl, label in IMPLEMENTATIONS.items()
            ]
            earlier = [f["evals"] for f in _superseded(facts, pot) if f["evals"]]
            curves.append(("rl-bk before the last fix", earlier, "--"))
            for label, runs, style in curves:
                if not runs:
                    continue
                # Each run on the evaluation grid (the two implementations evaluate at
                # slightly different env steps): its evaluation nearest each grid point.
                values = np.array([[_at(r, b, every, key) for b in grid] for r in runs])
                keep = ~np.isnan(values).any(0)
                if not keep.any():
                    continue
                x, values = np.array(grid)[keep] / 1000, values[:, keep]
                (line,) = ax.plot(
                    x,
                    values.mean(0),
                    marker=".",
                    linestyle=style,
                    label=f"{label} ({len(runs)} seed{'s' * (len(runs) > 1)})",
                )
                ax.fill_between(x, values.min(0), values.max(0), alpha=0.15, color=line.get_color())
            ax.set_title(f"{title}" if row == 0 else "")
            ax.set_xlabel("env steps (thousands)")
            ax.set_ylabel(f"greedy {key} ({facts['episodes']} episodes)")
            ax.set_ylim(-0.03, 1.03)
            ax.grid(alpha=0.3)
            if ax.get_legend_handles_labels()[0]:
                ax.legend(fontsize=8)
    fig.suptitle("BK reference check, GoToLocal-RedBall-S20: mean over seeds, band = min..max")
    fig.tight_layout()
    out.results.mkdir(parents=True, exist_ok=True)
    fig.savefig(out.png, dpi=110)
    plt.close(fig)
    return True


# ------------------------------------------------------------------------------ main
def _fresh_facts(steps: int, seeds: list[int]) -> dict:
    """This command, machine and date, and the plan's seeds, steps and evaluation."""
    from bench.paired_rounds import run_facts

    return {
        **run_facts("-m bench.bk_reference_check"),
        "seeds": seeds,
        "steps": steps,
        "every": _grid(steps)[1],
        "episodes": EPISODES,
    }


def _facts(out: Output, steps: int, seeds: list[int]) -> tuple[dict, dict]:
    """(facts, finished parts): a continued check keeps its start and its finished parts
    when it ran the same seeds and steps."""
    facts = _fresh_facts(steps, seeds)
    if out.json.is_file():
        old = json.loads(out.json.read_text())
        if old.get("seeds") == seeds and old.get("steps") == steps:
            return {k: v for k, v in old.items() if k != "finished"}, old.get("finished", {})
        print(
            f"[{NAME}] {out.json} planned seeds {old.get('seeds')} and steps "
            f"{old.get('steps')}: starting a new check",
            flush=True,
        )
    return facts, {}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--bk-repo", type=Path, help="a clone of BK's repository (normal or bare)")
    p.add_argument(
        "--setup-bk-env",
        action="store_true",
        help=f"export BK's source and make its environment ({_rel(BK_ENV)}), then go on",
    )
    p.add_argument(
        "--check-port",
        type=int,
        metavar="N",
        help="compare the BK-format potential with rl-bk's on N random transitions "
        "in BK's environment, then stop",
    )
    p.add_argument(
        "--parts",
        help="comma-separated part prefixes to run: bk, rl-bk/zero, bk/oracle/1 (default: all)",
    )
    p.add_argument("--report-only", action="store_true", help="rewrite the report and stop")
    p.add_argument(
        "--pool",
        metavar="NAMES",
        help="with the plan's report: pool its seeds with those of other runs of "
        "this check (their --out names, comma-separated; '' for none)",
    )
    p.add_argument(
        "--rerun",
        action="store_true",
        help="run the chosen rl-bk parts again even if finished (after a fix); "
        "their earlier records are kept as superseded",
    )
    p.add_argument("--steps", type=int, default=STEPS, help=f"env steps per run ({STEPS:,})")
    p.add_argument("--seeds", default=",".join(map(str, SEEDS)), help="comma-separated")
    p.add_argument("--out", help=f"output name for runs other than the plan's ({NAME}-smoke)")
    args = p.parse_args(argv)
    try:
        return _main(args)
    except CheckError as err:
        print(f"bk_reference_check: error: {err}", file=sys.stderr)
        return 2


def _main(args: argparse.Namespace) -> int:
    try:
        seeds = [int(s) for s in args.seeds.split(",") if s.strip()]
    except ValueError:
        raise CheckError(f"--seeds {args.seeds}: give comma-separated integers") from None
    if not seeds or args.steps < 1:
        raise CheckError("give at least one seed and a positive --steps")
    out = output_for(args.steps, seeds, args.out)
    facts, finished = _facts(out, args.steps, seeds)
    if args.report_only and not out.json.is_file():
        print(f"[{NAME}] nothing to report: {_rel(out.json)} does not exist (no check ran yet)")
        return 0
    if args.pool is not None:
        # The other runs' finished parts are copied into this report's JSON (their folders
        # under bench/runs/ are not committed).
        facts["pool"] = [n.strip() for n in args.pool.split(",") if n.strip()]
        facts["pooled_parts"] = {}
        for name in facts["pool"]:
            other = output_for(args.steps, [], name)
            if not other.json.is_file():
                raise CheckError(f"--pool {name}: no {_rel(other.json)}")
            other_facts = json.loads(other.json.read_text())
            if other_facts.get("steps") != facts["steps"]:
                raise CheckError(
                    f"--pool {name} ran {other_facts.get('steps')} env steps, not {facts['steps']}"
                )
            facts["pooled_parts"].update(other_facts.get("finished", {}))
    if args.report_only:
        write_report(out, facts, finished)
        print(f"[{NAME}] report: {_rel(out.md)}")
        return 0

    chosen = select_parts(parts(seeds), args.parts)
    needs_bk = args.setup_bk_env or args.check_port or any(c.startswith("bk/") for c in chosen)
    if args.setup_bk_env:
        if args.bk_repo is None:
            raise CheckError(
                "--setup-bk-env needs --bk-repo PATH (a clone of "
                "github.com/mansicer/background-knowledge-rl)"
            )
        setup_bk_env(args.bk_repo)
    bk = require_bk(args.bk_repo) if needs_bk else {}

    from bench.study import code_commit
    from rl_bk.experiments.task_config import load_task

    potentials = write_potentials(out)
    task = load_task(TASK)
    plan = {
        "potentials": potentials,
        "rl_bk_commit": code_commit(),
        "rl_bk_settings": {
            "ppo": task.ppo.model_dump(mode="json"),
            "model": task.model.model_dump(mode="json"),
            "env_runners": task.env_runners.model_dump(mode="json"),
            "evaluation": task.evaluation.model_dump(mode="json"),
            "shaping": {
                k: getattr(task.knowledge, k)
                for k in (
                    "extrinsic_coeff",
                    "potential_normalization",
                    "shaping_convention",
                    "shaping_coeff",
                )
            },
        },
    }
    if bk:
        plan.update(
            bk_commit=bk["bk_commit"], bk_env={k: bk[k] for k in ("python", "packages", "defaults")}
        )
    if not finished and not args.check_port:
        # No part has run: the plan is (re)written now, as this command starts the runs.
        facts.update({**_fresh_facts(args.steps, seeds), **plan})
    else:
        if facts.get("potentials") and facts["potentials"] != potentials:
            print(
                f"[{NAME}] warning: the potentials differ from those this check started "
                f"with ({facts['potentials']} then, {potentials} now); each part keeps its "
                "own",
                flush=True,
            )
        for key, value in plan.items():
            facts.setdefault(key, value)

    if args.check_port:
        result = None
        for pot in POTENTIALS:
            r = check_port(out, pot, args.check_port)
            result = r if pot == "oracle" else result
        facts["port_check"] = {k: v for k, v in result.items() if k != "disagree"}
        write_report(out, facts, finished)
        return 0

    if args.rerun:
        supersede(out, facts, finished, chosen)
    write_report(out, facts, finished)  # the plan, before the first run
    todo = [c for c in chosen if c not in finished]
    if any(c.startswith("bk/") for c in todo):
        for pot in sorted({c.split("/")[1] for c in todo if c.startswith("bk/")}):
            r = check_port(out, pot, QUICK_CHECK, seed=len(finished))
            if pot == "oracle" and "port_check" not in facts:
                facts["port_check"] = {k: v for k, v in r.items() if k != "disagree"}
    for part in todo:
        impl, pot, seed = part.split("/")
        print(f"[{NAME}] {part}: running", flush=True)
        if impl == "bk":
            result = run_bk_part(out, pot, int(seed), args.steps)
            result["commit"] = bk["bk_commit"]
        else:
            result = run_rl_bk_part(out, pot, int(seed), args.steps)
            result["commit"] = code_commit()
        finished[part] = {
            "implementation": impl,
            "potential": pot,
            "seed": int(seed),
            "potential_sha256": potentials[pot]["bk_sha256" if impl == "bk" else "rl_bk_sha256"],
            **result,
        }
        write_report(out, facts, finished)
        last = result["evals"][-1] if result["evals"] else {}
        print(
            f"[{NAME}] {part} done: greedy success {last.get('success', math.nan):.2f} at "
            f"{last.get('env_steps', 0):,} env steps, {result['env_steps_per_s']:.0f} env "
            f"steps/s ({result['run_dir']})",
            flush=True,
        )
    print(f"[{NAME}] report: {_rel(out.md)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
