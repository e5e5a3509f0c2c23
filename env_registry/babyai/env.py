"""BabyAI-Text: minigrid's BabyAI levels plus the BK tasks, with a symbolic observation and
a caption of the agent's view.

Observation (float32, flat): the 7×7×3 egocentric grid divided by 10 (147 values), then a
mission encoding over BabyAI's vocabulary (for each word, its first position in the mission
divided by the encoding length, 0 if absent): order-aware, so that "go to the red ball then
go to the blue box" differs from the converse, and cheap for an MLP.

Levels:
- every ``BabyAI-*`` level of minigrid, as ``BabyAI-Text-<Level>-v0``;
- BK's single-room tasks: ``BabyAI-Text-GoToLocal-<Target>-S{20,23,25,28,30}-v0`` (room 20 with
  7 distractors; then 23/25/28/30 with 12/15/20/25 distractors), the Pretraining task (a random
  red/green/blue ball/box), ``PickUp-<Target>-S20`` and the GoTo sequences.

``info["achieved"]``: what this step achieved, in BabyAI's goal words
(:mod:`env_registry.babyai.vocabulary`), for ELLM's reward: "pick up the <color> <kind>" when
the agent picked something up, "open the <color> door" when the door in front went from
closed (or locked) to open, "go to the <color> <kind>" when the step brought an object
(ball, box, key, door) in front of the agent that was not there before (a move or a turn;
not a drop).
``[]`` after reset.
"""

from __future__ import annotations

import contextlib
import io
from collections.abc import Mapping
from typing import Any, ClassVar

import gymnasium as gym
import numpy as np
from minigrid.envs.babyai.core.levelgen import LevelGen
from minigrid.envs.babyai.core.roomgrid_level import RoomGridLevel
from minigrid.envs.babyai.core.verifier import (
    AfterInstr,
    BeforeInstr,
    GoToInstr,
    ObjDesc,
    PickupInstr,
)

from env_registry.babyai.captioner import caption_babyai
from env_registry.babyai.vocabulary import THINGS
from env_registry.spec import EnvSpec

#: Words of BabyAI's mission grammar (minigrid.envs.babyai.core.verifier surface forms).
MISSION_VOCAB: tuple[str, ...] = (
    "go",
    "to",
    "the",
    "a",
    "pick",
    "up",
    "put",
    "next",
    "open",
    "door",
    "ball",
    "box",
    "key",
    "red",
    "green",
    "blue",
    "purple",
    "yellow",
    "grey",
    "then",
    "after",
    "you",
    "and",
    "behind",
    "in",
    "front",
    "of",
    "on",
    "your",
    "left",
    "right",
)
#: Things a goal can name, as a set for the per-step test in `_achieved`.
GOAL_THINGS = frozenset(THINGS)
#: minigrid's DIR_TO_VEC as plain ints: east, south, west, north.
_AHEAD: tuple[tuple[int, int], ...] = ((1, 0), (0, 1), (-1, 0), (0, -1))
MISSION_POSITIONS = 32  # positions are divided by this: missions longer than it saturate at 1
_WORD_INDEX = {w: i for i, w in enumerate(MISSION_VOCAB)}


def encode_mission(mission: str) -> np.ndarray:
    """Order-aware bag of words: for each vocabulary word, (first position + 1) / 32, else 0."""
    code = np.zeros(len(MISSION_VOCAB), dtype=np.float32)
    for pos, word in enumerate(mission.lower().replace(",", " ").split()):
        i = _WORD_INDEX.get(word)
        if i is not None and code[i] == 0.0:
            code[i] = min(1.0, (pos + 1) / MISSION_POSITIONS)
    return code


# --------------------------------------------------------------------------------------------
# BK's levels (single room, one target plus distractors), written on minigrid's level API.
# --------------------------------------------------------------------------------------------
class LocalTargetLevel(RoomGridLevel):
    """One room with a target object and ``num_dists`` distractors (duplicates allowed).

    ``target`` is ``(type, color)``; None draws the target from ``target_choices`` on each
    reset, with the env's own RNG (BK's Pretraining task uses numpy's global RNG instead,
    which makes seeded resets irreproducible). ``action`` is ``"goto"`` or ``"pickup"``.
    """

    def __init__(
        self,
        target: tuple[str, str] | None = ("ball", "red"),
        target_choices: tuple[tuple[str, str], ...] = (),
        action: str = "goto",
        room_size: int = 20,
        num_dists: int = 7,
        **kwargs: Any,
    ):
        self.target, self.target_choices = target, target_choices
        self.action, self.num_dists = action, num_dists
        super().__init__(num_rows=1, num_cols=1, room_size=room_size, **kwargs)

    def gen_mission(self) -> None:
        self.place_agent()
        obj_type, color = self.target or self._rand_elem(self.target_choices)
        obj, _ = self.add_object(0, 0, obj_type, color)
        self.add_distractors(num_distractors=self.num_dists, all_unique=False)
        self.check_objs_reachable()
        instr = PickupInstr if self.action == "pickup" else GoToInstr
        self.instrs = instr(ObjDesc(obj.type, obj.color))


class LocalSequenceLevel(LevelGen):
    """Go to A and to B in order ("... then ..." or "... after you ..."), one room."""

    def __init__(
        self,
        first: tuple[str, str] = ("ball", "red"),
        second: tuple[str, str] = ("box", "blue"),
        room_size: int = 20,
        num_dists: int = 7,
        **kwargs: Any,
    ):
        self.first, self.second = first, second
        super().__init__(
            room_size=room_size,
            num_rows=1,
            num_cols=1,
            num_dists=num_dists,
            action_kinds=["goto"],
            locked_room_prob=0,
            locations=False,
            unblocking=False,
            **kwargs,
        )

    def gen_mission(self) -> None:
        self.connect_all()
        obj_a, _ = self.add_object(0, 0, *self.first)
        obj_b, _ = self.add_object(0, 0, *self.second)
        self.add_distractors(num_distractors=self.num_dists, all_unique=False)
        self.place_agent()
        self.check_objs_reachable()
        go_a = GoToInstr(ObjDesc(obj_a.type, obj_a.color))
        go_b = GoToInstr(ObjDesc(obj_b.type, obj_b.color))
        if self._rand_elem(["before", "after"]) == "before":
            self.instrs = BeforeInstr(go_a, go_b)
        else:
            self.instrs = AfterInstr(go_b, go_a)


# --------------------------------------------------------------------------------------------
# The text env
# --------------------------------------------------------------------------------------------
class BabyAITextEnv(gym.Env):
    """A minigrid BabyAI level with a flat float32 observation and a caption in ``info``.

    Args (env_config keys):
        level: a minigrid gymnasium id (``"BabyAI-GoToLocal-v0"``) or one of this module's
            level classes' names (``"LocalTargetLevel"``, ``"LocalSequenceLevel"``).
        level_kwargs: keyword arguments for that level.
        caption: write ``info["caption"]`` (default True).
        render_pixels: build the level with ``render_mode="rgb_array"`` (default False).
    """

    metadata: ClassVar[dict[str, Any]] = {"render_modes": ["rgb_array"]}
    LEVEL_CLASSES: ClassVar[dict[str, type[RoomGridLevel]]] = {
        "LocalTargetLevel": LocalTargetLevel,
        "LocalSequenceLevel": LocalSequenceLevel,
    }

    def __init__(self, env_config: Mapping[str, Any]):
        level = env_config["level"]
        kwargs = dict(env_config.get("level_kwargs") or {})
        self.render_mode = "rgb_array" if env_config.get("render_pixels") else None
        if level in self.LEVEL_CLASSES:
            # YAML gives lists where the level classes take tuples.
            kwargs = {k: _as_tuples(v) for k, v in kwargs.items()}
            self.level = self.LEVEL_CLASSES[level](render_mode=self.render_mode, **kwargs)
        else:
            import minigrid  # noqa: F401  (registers the BabyAI-* ids)

            self.level = gym.make(level, render_mode=self.render_mode, **kwargs).unwrapped
        self.action_space = self.level.action_space
        n_obs = 7 * 7 * 3 + len(MISSION_VOCAB)
        self.observation_space = gym.spaces.Box(0.0, 25.5, (n_obs,), np.float32)
        self._caption = bool(env_config.get("caption", True))
        self._mission_code = np.zeros(len(MISSION_VOCAB), np.float32)
        self._success = False

    def _observe(self, obs: dict, info: dict, achieved: list[str]) -> np.ndarray:
        info["achieved"] = achieved
        info["mission"] = self.level.mission
        info["success"] = self._success
        if self._caption:
            carrying = self.level.carrying
            held = (carrying.color, carrying.type) if carrying is not None else None
            info["caption"] = caption_babyai(obs["image"], held)
        else:
            info["caption"] = ""
        image = obs["image"].reshape(-1).astype(np.float32) / 10.0
        return np.concatenate([image, self._mission_code])

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        # Level generation prints "Sampling rejected: ..." on many resets; keep worker logs clean.
        with contextlib.redirect_stdout(io.StringIO()):
            obs, info = self.level.reset(seed=seed, options=options)
        self._success = False
        self._mission_code = encode_mission(self.level.mission)
        info = dict(info)
        return self._observe(obs, info, []), info

    def step(self, action):
        level = self.level
        held, front_pos = level.carrying, _front_cell(level)
        front = level.grid.get(*front_pos)
        was_closed = front is not None and front.type == "door" and not front.is_open
        obs, reward, terminated, truncated, info = level.step(action)
        info = dict(info)
        self._success = self._success or (terminated and reward > 0)
        achieved = self._achieved(held, front_pos, front, was_closed)
        return self._observe(obs, info, achieved), float(reward), terminated, truncated, info

    def _achieved(
        self, held: Any, front_pos: tuple[int, int], front: Any, was_closed: bool
    ) -> list[str]:
        """Goal texts the last step achieved, from what the agent held and faced before it."""
        level = self.level
        out: list[str] = []
        carrying = level.carrying
        if held is None and carrying is not None:
            out.append(f"pick up the {carrying.color} {carrying.type}")
        pos = _front_cell(level)
        obj = level.grid.get(*pos)
        if obj is None or obj.type not in GOAL_THINGS:
            return out
        if obj is front and was_closed and obj.is_open:  # toggling does not move the agent
            out.append(f"open the {obj.color} door")
        dropped = obj is held and carrying is None  # put down in front: not a "go to"
        if (obj is not front or pos != front_pos) and not dropped:
            out.append(f"go to the {obj.color} {obj.type}")
        return out

    def render(self):
        return self.level.render() if self.render_mode else None

    def close(self) -> None:
        self.level.close()


def _front_cell(level: Any) -> tuple[int, int]:
    """The cell in front of the agent, as plain ints: minigrid's ``front_pos`` does the same
    with numpy arrays, at several times the cost, twice per step here."""
    x, y = level.agent_pos
    dx, dy = _AHEAD[level.agent_dir]
    return int(x) + dx, int(y) + dy


def _as_tuples(value: Any) -> Any:
    if isinstance(value, list):
        return tuple(_as_tuples(v) for v in value)
    return value


def make_babyai_text_env(env_config: Mapping[str, Any]) -> gym.Env:
    return BabyAITextEnv(env_config)


# --------------------------------------------------------------------------------------------
# Registered names
# --------------------------------------------------------------------------------------------
def _spec(name: str, description: str, level: str, **level_kwargs: Any) -> EnvSpec:
    return EnvSpec(
        name=name,
        family="babyai",
        make=make_babyai_text_env,
        defaults={"level": level, "level_kwargs": level_kwargs},
        description=description,
    )


_BK_TARGETS = {
    "RedBall": ("ball", "red"),
    "PurpleBall": ("ball", "purple"),
    "RedKey": ("key", "red"),
    "PurpleKey": ("key", "purple"),
}
_BK_SIZES = {20: 7, 23: 12, 25: 15, 28: 20, 30: 25}  # room size -> number of distractors

SPECS: list[EnvSpec] = []
for _size, _dists in _BK_SIZES.items():
    for _name, _target in _BK_TARGETS.items():
        SPECS.append(
            _spec(
                f"BabyAI-Text-GoToLocal-{_name}-S{_size}-v0",
                f"go to the {_target[1]} {_target[0]}; one {_size}x{_size} room, "
                f"{_dists} distractors (BK)",
                "LocalTargetLevel",
                target=_target,
                room_size=_size,
                num_dists=_dists,
            )
        )
SPECS += [
    _spec(
        "BabyAI-Text-GoToLocal-Pretraining-S20-v0",
        "go to a random red/green/blue ball/box; 20x20 room, 7 distractors (BK pre-training)",
        "LocalTargetLevel",
        target=None,
        target_choices=[(t, c) for c in ("red", "green", "blue") for t in ("ball", "box")],
    ),
    _spec(
        "BabyAI-Text-PickUp-RedBall-S20-v0",
        "pick up the red ball; 20x20 room (BK)",
        "LocalTargetLevel",
        target=("ball", "red"),
        action="pickup",
    ),
    _spec(
        "BabyAI-Text-PickUp-PurpleKey-S20-v0",
        "pick up the purple key; 20x20 room (BK)",
        "LocalTargetLevel",
        target=("key", "purple"),
        action="pickup",
    ),
    _spec(
        "BabyAI-Text-GoTo-RedBallBlueBox-S20-v0",
        "go to the red ball and the blue box, in the order the mission says (BK)",
        "LocalSequenceLevel",
        first=("ball", "red"),
        second=("box", "blue"),
    ),
    _spec(
        # BK's code names this task PurpleBallGreenKey but places a purple box; we place
        # the green key the name promises.
        "BabyAI-Text-GoTo-PurpleBallGreenKey-S20-v0",
        "go to the purple ball and the green key, in the order the mission says (BK)",
        "LocalSequenceLevel",
        first=("ball", "purple"),
        second=("key", "green"),
    ),
]


def _minigrid_babyai_ids() -> list[str]:
    import minigrid  # noqa: F401

    return sorted(i for i in gym.registry if i.startswith("BabyAI-") and "Text" not in i)


for _level in _minigrid_babyai_ids():
    _short = _level.removeprefix("BabyAI-").rsplit("-v", 1)[0]
    SPECS.append(_spec(f"BabyAI-Text-{_short}-v0", f"minigrid's {_level}", _level))
