"""NetHack-Text: ONI's NetHack tasks on nle 1.3.0, with a flat observation and a caption.

nle is imported only when an env is built, so ``import env_registry`` works without it. It must
be installed apart from ray (``pip install --no-deps nle==1.3.0 pybind11``): every nle release
pins an exact gymnasium version that differs from ray[rllib]'s.

Tasks (``env_config["task"]``):

- ``score``: nle's NetHackScore (score delta, -0.01 on steps where the game clock stands
  still). It has no success condition: ``info["success"]`` stays False.
- ``staircase``: nle's NetHackStaircase: +1 (plus the same time penalty) and the end of the
  episode when the hero goes down the stairs to level 2. ONI's version pays +50 instead.
- ``staircase_lvl3`` / ``staircase_lvl4``: ONI's tasks: +50, and the end of the episode, on
  the step where the dungeon depth (``blstats``) goes from above the target to 3 / 4 or
  deeper; 0 otherwise, no time penalty. ONI also requires the "You descend the stairs"
  message; we read the depth alone, so falling through a trap door counts too.
- ``oracle``: nle's NetHackOracle: +1 and success when standing next to the Oracle. A
  hallucinating hero can "see" the Oracle anywhere (ONI's Sober variant excludes that);
  the hallucination bit is in the observation, so the exploit is visible but not blocked.

Observation (float32, flat, 202 values, all in [-1, 1]):

- ``[0:27]``   the 27 ``blstats``, each scaled (see :data:`BLSTATS_SCALE`): positions, stats,
  depth, AC, levels and hunger divided by their usual ranges; HP and energy as a fraction of
  their maximum; score, gold, maxima, experience points and turn as ``log1p(v) / 15``; the
  condition mask as 1 if any condition is set; alignment as -1/0/1;
- ``[27:40]``  the 13 condition bits (blind, hallucinating, ..., order of
  :data:`env_registry.nethack.captioner.CONDITIONS`);
- ``[40:121]`` a 9x9 crop of ``chars`` centred on the hero, row-major, divided by 255 (cells
  off the 21x79 map are 0; unexplored map cells are spaces, 32/255);
- ``[121:202]`` the same crop of ``colors``, divided by 16.

Episodes end as nle ends them (death, task success) with ``terminated``; nle's step limit
(``max_episode_steps``, default 5000) gives ``truncated`` alone, not nle's done flag.

Seeding: nle's ``reset(seed=)`` does not seed the game. ``reset(seed=s)`` here seeds a
numpy Generator with s, and every reset from then on draws NetHack's (core, disp) seeds from
it, with NetHack's own reseeding off and the moon phase tied to the seed, so a seeded stream
of episodes replays exactly. Resets before any seed use nle's own randomness.

``render_pixels=True`` builds nle with its tile renderer; ``render()`` then returns an RGB
frame (336x1264x3). Off, nothing is drawn.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import gymnasium as gym
import numpy as np

from env_registry.errors import MissingDependencyError
from env_registry.nethack import captioner as cap
from env_registry.spec import EnvSpec

NLE_INSTALL_HINT = (
    "NetHack envs need nle 1.3.0, which is not importable: install it with "
    "`pip install --no-deps nle==1.3.0 pybind11` (--no-deps because its exact gymnasium pin "
    "conflicts with ray[rllib]'s), or run scripts/setup.sh"
)

TASKS = ("score", "staircase", "staircase_lvl3", "staircase_lvl4", "oracle")
#: Target depth of the tasks this module scores itself.
TARGET_DEPTH = {"staircase_lvl3": 3, "staircase_lvl4": 4}
DESCENT_REWARD = 50.0  # ONI's reward for reaching the target level

MISSIONS = {
    "score": "Get the highest score you can: kill monsters, collect gold and go deeper "
    "into the dungeon.",
    "staircase": "Find the staircase down and take it to dungeon level 2.",
    "staircase_lvl3": "Go down the stairs until you reach dungeon level 3.",
    "staircase_lvl4": "Go down the stairs until you reach dungeon level 4.",
    "oracle": "Find the Oracle, deeper in the dungeon, and stand next to her.",
}

#: What nle computes and returns each step (it adds glyphs, program_state and internal itself).
OBSERVATION_KEYS = ("message", "blstats", "chars", "colors")
CROP = 9
_R = CROP // 2
MAP_ROWS, MAP_COLS = 21, 79
N_CONDITIONS = len(cap.CONDITIONS)
OBS_SIZE = cap.BLSTATS_SIZE + N_CONDITIONS + 2 * CROP * CROP

#: ONI's extra actions (nle.nethack.Command names), on top of nle's 23 task actions.
EXTENDED_COMMANDS = ("CAST", "QUAFF", "PRAY", "PICKUP", "PAY")

_LOG_SCALE = 15.0  # log1p(v) / 15 reaches 1 at v ≈ 3.3 million
_LOG_IDX = (cap.BL_SCORE, cap.BL_HPMAX, cap.BL_GOLD, cap.BL_ENEMAX, cap.BL_EXP, cap.BL_TIME)
#: Divisor of each linearly scaled blstats entry (1 where another rule applies).
BLSTATS_SCALE = np.ones(cap.BLSTATS_SIZE, np.float32)
for _i, _s in {
    cap.BL_X: MAP_COLS,
    cap.BL_Y: MAP_ROWS,
    cap.BL_STR25: 25,
    cap.BL_STR125: 125,
    cap.BL_DEX: 25,
    cap.BL_CON: 25,
    cap.BL_INT: 25,
    cap.BL_WIS: 25,
    cap.BL_CHA: 25,
    cap.BL_DEPTH: 50,
    cap.BL_AC: 20,
    cap.BL_HD: 30,
    cap.BL_XP: 30,
    cap.BL_HUNGER: 6,
    cap.BL_CAP: 5,
    cap.BL_DNUM: 10,
    cap.BL_DLEVEL: 50,
}.items():
    BLSTATS_SCALE[_i] = _s
_INV_SCALE = (1.0 / BLSTATS_SCALE).tolist()
_CROP_SCALE = np.repeat(np.array([1 / 255, 1 / 16], np.float32), CROP * CROP)
_NO_BITS = [0.0] * N_CONDITIONS


def blstats_features(blstats: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """The 27 scaled blstats plus the 13 condition bits (40 float32 values in [-1, 1]).

    Writes into ``out`` (40 float32) when given. Plain Python on 27 numbers: per step, it is
    faster than a dozen small numpy calls.
    """
    if out is None:
        out = np.empty(cap.BLSTATS_SIZE + N_CONDITIONS, np.float32)
    v = blstats.tolist()
    f = [x * s for x, s in zip(v, _INV_SCALE, strict=True)]
    for i in _LOG_IDX:
        f[i] = math.log1p(v[i]) / _LOG_SCALE if v[i] > 0 else 0.0
    f[cap.BL_HP] = v[cap.BL_HP] / (v[cap.BL_HPMAX] or 1)
    f[cap.BL_ENE] = v[cap.BL_ENE] / (v[cap.BL_ENEMAX] or 1)
    condition = v[cap.BL_CONDITION]
    f[cap.BL_CONDITION] = float(condition != 0)
    f += [float(condition >> k & 1) for k in range(N_CONDITIONS)] if condition else _NO_BITS
    out[:] = [1.0 if x > 1.0 else -1.0 if x < -1.0 else x for x in f]
    return out


def reached_target_depth(prev_depth: int, depth: int, target: int) -> bool:
    """Whether this step took the hero down to ``target`` (or past it) for the first time.

    ``prev_depth`` and ``depth`` are ``blstats[BL_DEPTH]`` before and after the step. A dead
    hero's blstats read depth 0, which never counts.
    """
    return prev_depth < target <= depth


def _import_nle() -> Any:
    try:
        from nle import nethack
        from nle.env import tasks
    except ImportError as err:
        raise MissingDependencyError(f"{NLE_INSTALL_HINT} ({err})") from err
    return nethack, tasks


class NetHackTextEnv(gym.Env):
    """An nle task with a flat float32 observation and a caption in ``info``.

    Args (env_config keys):
        task: one of :data:`TASKS` (default ``"score"``).
        max_episode_steps: nle's step limit (default 5000); reaching it sets ``truncated``.
        extended_actions: add ONI's CAST, QUAFF, PRAY, PICKUP and PAY to nle's 23 task
            actions (default False).
        caption: write ``info["caption"]`` (default True).
        render_pixels: build nle's tile renderer so that ``render()`` returns RGB frames.

    ``info`` after every reset and step: ``caption``, ``message`` (the message line alone),
    ``message_count`` (occurrences of this message in the episode so far, this one included),
    ``mission``, ``success``, ``score``, ``depth``, ``end_status`` (nle's, as an int).
    ``score`` is the in-game score; on the step that ends the game it is the score just
    before (nle's last observation has the status line zeroed).
    """

    metadata = {"render_modes": ["rgb_array"], "render_fps": 42}  # noqa: RUF012 (gymnasium API)

    def __init__(self, env_config: Mapping[str, Any] | None = None):
        env_config = dict(env_config or {})
        nethack, tasks = _import_nle()
        self.task = env_config.get("task", "score")
        if self.task not in TASKS:
            raise ValueError(f"unknown NetHack task {self.task!r}; expected one of {TASKS}")
        actions = tasks.TASK_ACTIONS
        if env_config.get("extended_actions", False):
            actions = actions + tuple(getattr(nethack.Command, c) for c in EXTENDED_COMMANDS)
        nle_class = {"staircase": tasks.NetHackStaircase, "oracle": tasks.NetHackOracle}.get(
            self.task, tasks.NetHackScore
        )
        pixels = bool(env_config.get("render_pixels", False))
        self.render_mode = "rgb_array" if pixels else None
        self._nle = nle_class(
            observation_keys=OBSERVATION_KEYS,
            max_episode_steps=int(env_config.get("max_episode_steps", 5000)),
            actions=actions,
            render_mode="pixel" if pixels else "ansi",
            fix_moon_phase=True,  # with seeds set, the moon phase follows them, not the clock
        )
        # nle's own success status (staircase, oracle); the score task has none.
        success = getattr(nle_class.StepStatus, "TASK_SUCCESSFUL", None)
        self._success_status = None if success is None else int(success)
        self._aborted_status = int(nle_class.StepStatus.ABORTED)
        self._target_depth = TARGET_DEPTH.get(self.task)
        self._caption = bool(env_config.get("caption", True))
        self.mission = MISSIONS[self.task]

        self.action_space = gym.spaces.Discrete(len(actions))
        self.observation_space = gym.spaces.Box(-1.0, 1.0, (OBS_SIZE,), np.float32)
        # chars and colors, padded by the crop radius, so that a crop is one slice.
        self._maps = np.zeros((2, MAP_ROWS + 2 * _R, MAP_COLS + 2 * _R), np.uint8)
        self._seed_rng: np.random.Generator | None = None
        self._counter = cap.MessageCounter()
        self._success = False
        self._depth = 0
        self._score = 0  # the in-game score, kept through the step that ends the game

    # ---------------------------------------------------------------------------- helpers
    def _observe(self, obs: dict, end_status: int) -> tuple[np.ndarray, dict]:
        blstats = obs["blstats"]
        x, y = int(blstats[cap.BL_X]), int(blstats[cap.BL_Y])
        self._maps[0, _R:-_R, _R:-_R] = obs["chars"]
        self._maps[1, _R:-_R, _R:-_R] = obs["colors"]
        features = np.empty(OBS_SIZE, np.float32)
        n = cap.BLSTATS_SIZE + N_CONDITIONS
        blstats_features(blstats, out=features[:n])
        features[n:].reshape(2, CROP, CROP)[:] = self._maps[:, y : y + CROP, x : x + CROP]
        features[n:] *= _CROP_SCALE

        message = cap.decode_message(obs["message"])
        info = {
            "caption": cap.caption_nethack(message, blstats) if self._caption else "",
            "message": message,
            "message_count": self._counter.add(message),
            "mission": self.mission,
            "success": self._success,
            "score": self._score,
            "depth": int(blstats[cap.BL_DEPTH]),
            "end_status": int(end_status),
        }
        return features, info

    def episode_message_counts(self) -> dict[str, int]:
        """Occurrences of each message in the current episode so far (the empty one included)."""
        return dict(self._counter.counts)

    # ------------------------------------------------------------------------------- API
    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        if seed is not None:
            self._seed_rng = np.random.default_rng(seed)
        if self._seed_rng is not None:
            core, disp = (int(s) for s in self._seed_rng.integers(0, 2**63 - 1, size=2))
            self._nle.seed(core=core, disp=disp, reseed=False)
        # nle's `options` are NetHack game options, not gymnasium's reset options: not passed.
        obs, nle_info = self._nle.reset(seed=seed)
        self._score = int(obs["blstats"][cap.BL_SCORE])
        self._counter.reset()
        self._success = False
        self._depth = int(obs["blstats"][cap.BL_DEPTH])
        return self._observe(obs, nle_info["end_status"])

    def step(self, action):
        obs, reward, done, _, nle_info = self._nle.step(int(action))
        end_status = int(nle_info["end_status"])
        truncated = end_status == self._aborted_status
        terminated = bool(done) and not truncated
        depth = int(obs["blstats"][cap.BL_DEPTH])
        if self._target_depth is not None:
            reached = reached_target_depth(self._depth, depth, self._target_depth)
            reward = DESCENT_REWARD if reached else 0.0
            if reached:
                self._success, terminated, truncated = True, True, False
        elif end_status == self._success_status:
            self._success = True
        self._depth = depth
        if not done:  # the observation after the game ends has its status line zeroed
            self._score = int(obs["blstats"][cap.BL_SCORE])
        features, info = self._observe(obs, end_status)
        return features, float(reward), terminated, truncated, info

    def render(self):
        if self.render_mode == "rgb_array":
            return self._nle.render()
        return None

    def close(self):
        self._nle.close()
        super().close()


def make_nethack_text_env(env_config: Mapping[str, Any]) -> gym.Env:
    return NetHackTextEnv(env_config)


# --------------------------------------------------------------------------------------------
# Registered names
# --------------------------------------------------------------------------------------------
def _spec(name: str, task: str, description: str) -> EnvSpec:
    return EnvSpec(
        name=name,
        family="nethack",
        make=make_nethack_text_env,
        defaults={"task": task, "max_episode_steps": 5000},
        description=description,
    )


SPECS: list[EnvSpec] = [
    _spec("NetHack-Text-Score-v0", "score", "NetHack score task: reward = score delta (ONI)"),
    _spec(
        "NetHack-Text-Staircase-v0",
        "staircase",
        "NetHack: take the stairs down to dungeon level 2 (nle's Staircase, ONI)",
    ),
    _spec(
        "NetHack-Text-StaircaseLvl3-v0",
        "staircase_lvl3",
        "NetHack: reach dungeon level 3, +50 on arrival (ONI)",
    ),
    _spec(
        "NetHack-Text-StaircaseLvl4-v0",
        "staircase_lvl4",
        "NetHack: reach dungeon level 4, +50 on arrival (ONI)",
    ),
    _spec(
        "NetHack-Text-Oracle-v0",
        "oracle",
        "NetHack: find the Oracle and stand next to her (ONI)",
    ),
]
