"""MineDojo-Text: PTGM's five MineDojo tasks behind the rl-bk env contract.

MineDojo cannot run on the machines this project is developed on: it needs its own virtualenv
(gym 0.21 and numpy<2), JDK 8, network access the first time Minecraft is built, and a
display. So this module does two things:

1. When something is missing, building a ``MineDojo-Text-*`` env raises
   :class:`~env_registry.errors.MissingDependencyError` with one message that says what to
   install and why (tested).
2. Where MineDojo is present, :class:`MineDojoTextEnv` adapts it (UNTESTED: written against
   MineDojo 0.1's documented API and never run; expect to fix details on first contact):
   gym 0.21's ``reset() -> obs`` and ``step() -> (obs, reward, done, info)`` become
   gymnasium's; MineDojo's ``MultiDiscrete`` action space is kept as it is.

Symbolic observation (float32, flat, 290 values in [-1, 1]; MineDojo's RGB frame is not used):

- ``[0:270]``   the 3x3x3 voxels around the agent (``use_voxel=True``), each one-hot over
  :data:`BLOCK_CLASSES` (x, y, z order of MineDojo's ``voxels["block_name"]``);
- ``[270:281]`` inventory counts of :data:`TRACKED_ITEMS`, divided by 64 and clipped;
- ``[281:284]`` health / 20, food / 20, oxygen / 300;
- ``[284:290]`` pitch / 90, sin(yaw), cos(yaw), light level / 15, can see sky, is raining.

Caption: the block kinds in the voxel cube, the item in hand, the inventory and health/food
(:mod:`env_registry.minedojo.captioner`). ``info["success"]`` turns True (and stays so for
the episode) when MineDojo reports success or pays a positive reward: each of PTGM's tasks
pays only for its goal. Episode length is PTGM's ``max_steps``, enforced here
as truncation. PTGM's ``fast_reset`` schedule and ``freeze_equipped`` wrapper are not
reproduced; MineDojo's ``fast_reset=True`` is passed instead. Seeds are fixed when the env is
built (``env_config`` keys ``seed`` and ``world_seed``): MineDojo cannot be reseeded by
``reset(seed=)``.
"""

from __future__ import annotations

import importlib
import re
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from typing import Any

import gymnasium as gym
import numpy as np

from env_registry.errors import MissingDependencyError
from env_registry.minedojo.captioner import caption_minedojo, normalize_name
from env_registry.spec import EnvSpec

MINEDOJO_INSTALL = (
    'pip install setuptools==65.5.0 "wheel<0.40" && '
    "pip install --no-build-isolation gym==0.21.0 && "
    'pip install minedojo "numpy<2"'
)
_JAVA_HELP = (
    "JDK 8 (not 11 or 17: MineDojo's Minecraft build uses Gradle 4.10 and ForgeGradle 2.2; "
    "Debian 12 has no openjdk-8 package, so take Temurin 8 or Zulu 8), first on PATH and "
    "as JAVA_HOME"
)
_RUNTIME_HELP = (
    "network access at the first reset (Gradle, Forge and Minecraft 1.11.2 are downloaded), "
    "and a display (e.g. Xvfb) or MINEDOJO_HEADLESS=1"
)

# --------------------------------------------------------------------------------------------
# PTGM's tasks (PKU-RL/PTGM tasks/task_specs.yaml)
# --------------------------------------------------------------------------------------------
#: task key -> MineDojo task id, extra minedojo.make kwargs, max steps, PTGM's prompt.
PTGM_TASKS: dict[str, dict[str, Any]] = {
    "log_plains": {
        "task_id": "harvest_1_log_plains",
        "sim": {},
        "max_steps": 2000,
        "prompt": "cut a tree",
    },
    "water_bucket": {
        "task_id": "harvest",
        "sim": {
            "specified_biome": "plains",
            "target_names": "water_bucket",
            "target_quantities": 1,
            "reward_weights": 1,
        },
        "mainhand": "bucket",
        "max_steps": 2000,
        "prompt": "find water, obtain water bucket",
    },
    "cobblestone": {
        "task_id": "harvest_1_cobblestone_with_wooden_pickaxe",
        "sim": {"specified_biome": "plains"},
        "max_steps": 500,
        "prompt": "obtain cobblestone",
    },
    "iron_ore": {
        "task_id": "harvest_1_iron_ore_with_stone_pickaxe",
        "sim": {},
        "max_steps": 2000,
        "prompt": "obtain iron ore",
    },
    "spider": {
        "task_id": "combat_spider_plains_diamond_armors_diamond_sword_shield",
        "sim": {},
        "mainhand": "diamond_sword",
        "max_steps": 500,
        "prompt": "combat a spider in night plains",
    },
}

#: Voxel classes: a block name goes to the first class whose key it contains, else "other".
BLOCK_CLASSES: tuple[str, ...] = (
    "air",
    "log",
    "leaves",
    "grass",
    "dirt",
    "stone",
    "cobblestone",
    "iron_ore",
    "water",
    "other",
)
_BLOCK_MATCH = (  # order matters: "cobblestone" and "iron_ore" before "stone"
    ("cobblestone", "cobblestone"),
    ("iron_ore", "iron_ore"),
    ("log", "log"),
    ("leaves", "leaves"),
    ("grass", "grass"),
    ("dirt", "dirt"),
    ("stone", "stone"),
    ("water", "water"),
    ("air", "air"),
)
TRACKED_ITEMS: tuple[str, ...] = (
    "log",
    "planks",
    "stick",
    "crafting_table",
    "wooden_pickaxe",
    "stone_pickaxe",
    "cobblestone",
    "iron_ore",
    "bucket",
    "water_bucket",
    "diamond_sword",
)
VOXELS = 27
OBS_SIZE = VOXELS * len(BLOCK_CLASSES) + len(TRACKED_ITEMS) + 3 + 6


# --------------------------------------------------------------------------------------------
# Dependency checks
# --------------------------------------------------------------------------------------------
def java_major_version(version_output: str) -> int | None:
    """The major version in ``java -version`` output: 8 for ``1.8.0_392``, 17 for ``17.0.9``."""
    match = re.search(r'version "(\d+)(?:\.(\d+))?', version_output)
    if match is None:
        return None
    major = int(match.group(1))
    return int(match.group(2) or 0) if major == 1 else major


def _java_version_output(java: str) -> str:
    try:
        done = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.SubprocessError) as err:
        return f"(could not run {java} -version: {err})"
    return done.stderr + done.stdout  # java prints its version on stderr


def _java_problem() -> str | None:
    """What is wrong with the Java on PATH for MineDojo, or None if it is Java 8."""
    java = shutil.which("java")
    if java is None:
        return "there is no `java` on PATH"
    output = _java_version_output(java)
    version = java_major_version(output)
    if version == 8:
        return None
    found = (
        f"version {version}"
        if version is not None
        else f"an unknown version ({output.strip()[:80]})"
    )
    return f"`java` on PATH ({java}) is {found}"


def require_minedojo() -> Any:
    """Imports and returns minedojo, or raises MissingDependencyError saying what is missing."""
    try:
        minedojo = importlib.import_module("minedojo")
    except Exception as err:  # ImportError, or numpy 2's AttributeError inside minedojo
        raise MissingDependencyError(
            f"MineDojo envs need the optional package minedojo, which is not importable "
            f"({type(err).__name__}: {err}). Install it in a separate virtualenv (it pins "
            f"gym==0.21.0 and numpy<2, which conflict with this project's environment): "
            f"{MINEDOJO_INSTALL}. It also needs {_JAVA_HELP}; {_RUNTIME_HELP}."
        ) from err
    problem = _java_problem()
    if problem is not None:
        raise MissingDependencyError(
            f"minedojo is installed but Java 8 is missing: {problem}. MineDojo needs "
            f"{_JAVA_HELP}. At the first reset it also needs {_RUNTIME_HELP}."
        )
    return minedojo


# --------------------------------------------------------------------------------------------
# Observation (pure)
# --------------------------------------------------------------------------------------------
def block_class(name: str) -> int:
    """Index in :data:`BLOCK_CLASSES` of a MineDojo block name."""
    name = normalize_name(name)
    for key, cls in _BLOCK_MATCH:
        if key in name:
            return BLOCK_CLASSES.index(cls)
    return BLOCK_CLASSES.index("other")


def inventory_counts(names: Sequence[Any], quantities: Sequence[Any]) -> dict[str, int]:
    """Sums MineDojo's per-slot inventory into item name -> count."""
    counts: dict[str, int] = {}
    for name, quantity in zip(names, quantities, strict=True):
        key = normalize_name(name)
        if key != "air" and int(quantity) > 0:
            counts[key] = counts.get(key, 0) + int(quantity)
    return counts


def symbolic_observation(obs: Mapping[str, Any]) -> np.ndarray:
    """The 290-value float32 vector described in the module docstring (UNTESTED on MineDojo)."""
    blocks = np.asarray(obs["voxels"]["block_name"]).reshape(-1)[:VOXELS]
    voxels = np.zeros((VOXELS, len(BLOCK_CLASSES)), np.float32)
    for i, name in enumerate(blocks):
        voxels[i, block_class(name)] = 1.0
    counts = inventory_counts(obs["inventory"]["name"], obs["inventory"]["quantity"])
    items = np.array([counts.get(k, 0) / 64.0 for k in TRACKED_ITEMS], np.float32)
    life, loc = obs["life_stats"], obs["location_stats"]
    yaw = np.deg2rad(float(np.ravel(loc["yaw"])[0]))
    stats = np.array(
        [
            float(np.ravel(life["life"])[0]) / 20.0,
            float(np.ravel(life["food"])[0]) / 20.0,
            float(np.ravel(life["oxygen"])[0]) / 300.0,
            float(np.ravel(loc["pitch"])[0]) / 90.0,
            np.sin(yaw),
            np.cos(yaw),
            float(np.ravel(loc["light_level"])[0]) / 15.0,
            float(np.ravel(loc["can_see_sky"])[0]),
            float(np.ravel(loc["is_raining"])[0]),
        ],
        np.float32,
    )
    return np.clip(np.concatenate([voxels.reshape(-1), items, stats]), -1.0, 1.0)


# --------------------------------------------------------------------------------------------
# The env (UNTESTED: needs MineDojo, JDK 8, network and a display)
# --------------------------------------------------------------------------------------------
class MineDojoTextEnv(gym.Env):
    """One of PTGM's MineDojo tasks with the rl-bk contract. UNTESTED, see the module docstring.

    Args (env_config keys):
        task: a key of :data:`PTGM_TASKS`.
        max_episode_steps: default PTGM's ``max_steps`` for the task.
        seed, world_seed: MineDojo's seeds, fixed for the env's life (default 0 and 0).
        caption: write ``info["caption"]`` (default True).
        render_pixels: render 160x256 frames (``render()`` returns the last one); off, MineDojo
            still renders, at 64x64, because it cannot be told not to.
        discrete_actions: act through ``Discrete(len(DISCRETE_ACTIONS))`` (see there) instead
            of MineDojo's MultiDiscrete (default False). The trajectory dataset and PTGM's
            low-level policy take discrete actions; PTGM's task files set it.
    """

    metadata = {"render_modes": ["rgb_array"], "render_fps": 20}  # noqa: RUF012 (gymnasium API)

    def __init__(self, env_config: Mapping[str, Any]):
        minedojo = require_minedojo()
        from minedojo.sim import InventoryItem

        task = PTGM_TASKS[env_config["task"]]
        pixels = bool(env_config.get("render_pixels", False))
        self.render_mode = "rgb_array" if pixels else None
        kwargs: dict[str, Any] = dict(task["sim"])
        if "mainhand" in task:
            kwargs["initial_inventory"] = [
                InventoryItem(slot="mainhand", name=task["mainhand"], variant=None, quantity=1)
            ]
        self._env = minedojo.make(
            task_id=task["task_id"],
            image_size=(160, 256) if pixels else (64, 64),
            seed=int(env_config.get("seed", 0)),
            world_seed=int(env_config.get("world_seed", 0)),
            use_voxel=True,
            voxel_size={"xmin": -1, "ymin": -1, "zmin": -1, "xmax": 1, "ymax": 1, "zmax": 1},
            fast_reset=True,
            **kwargs,
        )
        self.mission = task["prompt"]
        self._max_steps = int(env_config.get("max_episode_steps", task["max_steps"]))
        self._caption = bool(env_config.get("caption", True))
        self._discrete = bool(env_config.get("discrete_actions", False))
        self.action_space = (
            gym.spaces.Discrete(len(DISCRETE_ACTIONS))
            if self._discrete
            else gym.spaces.MultiDiscrete(np.asarray(self._env.action_space.nvec))
        )
        self.observation_space = gym.spaces.Box(-1.0, 1.0, (OBS_SIZE,), np.float32)
        self._steps, self._success, self._frame = 0, False, None

    def _observe(self, obs: Mapping[str, Any]) -> tuple[np.ndarray, dict]:
        if self.render_mode == "rgb_array":
            self._frame = np.transpose(np.asarray(obs["rgb"]), (1, 2, 0))  # CHW -> HWC
        caption = ""
        if self._caption:
            life = obs["life_stats"]
            caption = caption_minedojo(
                np.asarray(obs["voxels"]["block_name"]).reshape(-1),
                inventory_counts(obs["inventory"]["name"], obs["inventory"]["quantity"]),
                str(np.ravel(obs["equipment"]["name"])[0]),
                float(np.ravel(life["life"])[0]),
                float(np.ravel(life["food"])[0]),
            )
        info = {"caption": caption, "mission": self.mission, "success": self._success}
        return symbolic_observation(obs), info

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)  # seeds np_random only; MineDojo's seeds are fixed at build
        obs = self._env.reset()
        self._steps, self._success = 0, False
        return self._observe(obs)

    def step(self, action):
        if self._discrete:
            action = minedojo_action(int(action))
        obs, reward, done, minedojo_info = self._env.step(np.asarray(action, dtype=np.int64))
        self._steps += 1
        reported = (
            bool(minedojo_info.get("success", False)) if hasattr(minedojo_info, "get") else False
        )
        self._success = self._success or reported or reward > 0
        truncated = self._steps >= self._max_steps and not done
        features, info = self._observe(obs)
        return features, float(reward), bool(done), truncated, info

    def render(self):
        return self._frame

    def close(self):
        self._env.close()
        super().close()


#: A small discrete action set over MineDojo's MultiDiscrete(8) action vector, for methods
#: that need discrete actions (the trajectory dataset, PTGM's low-level policy). Slots:
#: [forward/back, left/right, jump/sneak/sprint, camera pitch, camera yaw, functional,
#: craft argument, inventory argument]; camera 12 is "no turn", each step of it 15 degrees;
#: functional 1 use, 3 attack. (name, vector) pairs; the names are what captions could say.
DISCRETE_ACTIONS: tuple[tuple[str, tuple[int, ...]], ...] = (
    ("no-op", (0, 0, 0, 12, 12, 0, 0, 0)),
    ("forward", (1, 0, 0, 12, 12, 0, 0, 0)),
    ("back", (2, 0, 0, 12, 12, 0, 0, 0)),
    ("left", (0, 1, 0, 12, 12, 0, 0, 0)),
    ("right", (0, 2, 0, 12, 12, 0, 0, 0)),
    ("jump forward", (1, 0, 1, 12, 12, 0, 0, 0)),
    ("look up", (0, 0, 0, 11, 12, 0, 0, 0)),
    ("look down", (0, 0, 0, 13, 12, 0, 0, 0)),
    ("turn left", (0, 0, 0, 12, 11, 0, 0, 0)),
    ("turn right", (0, 0, 0, 12, 13, 0, 0, 0)),
    ("attack", (0, 0, 0, 12, 12, 3, 0, 0)),
    ("use", (0, 0, 0, 12, 12, 1, 0, 0)),
)


def minedojo_action(index: int) -> np.ndarray:
    """MineDojo's action vector for ``DISCRETE_ACTIONS[index]``."""
    if not 0 <= index < len(DISCRETE_ACTIONS):
        raise ValueError(
            f"discrete MineDojo action {index} out of range [0, {len(DISCRETE_ACTIONS)})"
        )
    return np.asarray(DISCRETE_ACTIONS[index][1], dtype=np.int64)


def make_minedojo_text_env(env_config: Mapping[str, Any]) -> gym.Env:
    require_minedojo()  # fail with the full message before touching anything else
    return MineDojoTextEnv(env_config)


# --------------------------------------------------------------------------------------------
# Registered names
# --------------------------------------------------------------------------------------------
def _spec(name: str, task: str, description: str) -> EnvSpec:
    return EnvSpec(
        name=name,
        family="minedojo",
        make=make_minedojo_text_env,
        defaults={"task": task, "max_episode_steps": PTGM_TASKS[task]["max_steps"]},
        description=description,
    )


SPECS: list[EnvSpec] = [
    _spec(
        "MineDojo-Text-LogPlains-v0",
        "log_plains",
        "MineDojo: harvest a log in plains, 2000 steps (PTGM)",
    ),
    _spec(
        "MineDojo-Text-WaterBucket-v0",
        "water_bucket",
        "MineDojo: fill the bucket in hand with water, plains, 2000 steps (PTGM)",
    ),
    _spec(
        "MineDojo-Text-Cobblestone-v0",
        "cobblestone",
        "MineDojo: mine cobblestone with a wooden pickaxe, 500 steps (PTGM)",
    ),
    _spec(
        "MineDojo-Text-IronOre-v0",
        "iron_ore",
        "MineDojo: mine iron ore with a stone pickaxe, 2000 steps (PTGM)",
    ),
    _spec(
        "MineDojo-Text-Spider-v0",
        "spider",
        "MineDojo: kill a spider in plains, diamond sword and armour, 500 steps (PTGM)",
    ),
]
