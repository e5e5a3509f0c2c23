"""Crafter-Text: crafter 1.8.3 as a gymnasium env, with a symbolic observation, a caption of
the player's view and single-achievement variants.

crafter ships an old gym-style env (``reset() -> obs``, ``step -> (obs, reward, done, info)``)
that gymnasium cannot wrap any more, so :class:`CrafterTextEnv` is a ``gymnasium.Env`` of its
own around a ``crafter.Env`` subclass that draws nothing it is not asked for. Per step, crafter
draws a 64×64 RGB frame and a 64×64 semantic map of the whole world; together they cost more
than the game itself and no default policy reads them, so with ``render_pixels=False`` neither
is made.

Observation (float32, flat, all values in [0, 1]), 1156 values, in this order:

- ``7 × 9 × 18`` = 1134: the local view that crafter draws (9 wide, 7 tall, the player at
  row 3, column 4), row-major from the north-west corner (row 0 is north, column 0 west);
  each cell is a one-hot over crafter's semantic ids 1..18, i.e. :data:`MATERIALS` (water,
  grass, stone, path, sand, tree, lava, coal, iron, diamond, table, furnace) then
  :data:`OBJECTS` (player, cow, zombie, skeleton, arrow, plant). As in crafter's semantic map,
  a creature hides the material under it. Cells outside the world are all zeros.
- 16: the inventory, :data:`ITEMS` in crafter's order (health, food, drink, energy, sapling,
  wood, stone, coal, iron, diamond, the pickaxes, the swords), each count / 9.
- 4: facing, one-hot over west, east, north, south (the order of crafter's move actions).
- 1: daylight (crafter's ``world.daylight``, 1 at noon).
- 1: 1.0 while the player sleeps.

Directions: north is up on crafter's screen, which is **-y** in crafter's world coordinates
(``move_up`` adds ``(0, -1)``; the renderer draws world ``(x, y)`` at image row ``y``).

Rewards: the full game keeps crafter's reward (+1 the first time each achievement unlocks in
an episode, plus the change in health / 10). A single-task variant (``task`` set to an
achievement name) gives +1 on the step the task's achievement first unlocks and 0 otherwise,
and ends the episode there: a sparse goal reward, so that reward shaping (BK's, ELLM's)
is what makes the difference.

``info["success"]``: for a single task, whether its achievement unlocked this episode. The
full game has no goal, so ``success`` is always False there; read ``info["achievements"]``
(counts this episode, all 22 names) or ``info["achievements_unlocked"]`` instead, from which
the Crafter score (geometric mean of per-achievement success rates) is computed.

``info["achieved"]``: what this step achieved, as goal texts (:data:`ACHIEVED_TEXT`, the words
of :data:`env_registry.crafter.vocabulary.GOALS`), one per achievement whose count rose on the
step, every time (not only the first), and "sleep" on the step the player falls asleep (not
when crafter counts wake_up); ``[]`` after reset. ELLM's reward matches these
against the goals suggested for the state before the step.

Seeding: crafter seeds episode ``k`` of an env built with seed ``s`` from
``hash((s, k))``. ``reset(seed=s)`` restarts that sequence at ``s``, so equal seeds give equal
worlds and the unseeded resets after it continue a reproducible stream. Two things in crafter
1.8.3 would still make equal seeds play different games, and are fixed here: despawning picks
a creature from a set ordered by memory address (we order by creation), and frames drawn at
night take their noise from the world's RNG (we restore the RNG around each frame, so pixels
on or off play the same game).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any, ClassVar

import gymnasium as gym
import numpy as np

from env_registry.crafter.captioner import CAPTIONERS
from env_registry.spec import EnvSpec

# crafter's vocabulary (crafter 1.8.3 data.yaml), written out so that importing the registry
# does not import crafter, whose world generation pulls in numba (about 60 MB per process).
# CrafterTextEnv checks these against crafter.constants when it is built.
MATERIALS: tuple[str, ...] = (
    "water",
    "grass",
    "stone",
    "path",
    "sand",
    "tree",
    "lava",
    "coal",
    "iron",
    "diamond",
    "table",
    "furnace",
)
OBJECTS: tuple[str, ...] = ("player", "cow", "zombie", "skeleton", "arrow", "plant")
ITEMS: tuple[str, ...] = (
    "health",
    "food",
    "drink",
    "energy",
    "sapling",
    "wood",
    "stone",
    "coal",
    "iron",
    "diamond",
    "wood_pickaxe",
    "stone_pickaxe",
    "iron_pickaxe",
    "wood_sword",
    "stone_sword",
    "iron_sword",
)
ACHIEVEMENTS: tuple[str, ...] = (
    "collect_coal",
    "collect_diamond",
    "collect_drink",
    "collect_iron",
    "collect_sapling",
    "collect_stone",
    "collect_wood",
    "defeat_skeleton",
    "defeat_zombie",
    "eat_cow",
    "eat_plant",
    "make_iron_pickaxe",
    "make_iron_sword",
    "make_stone_pickaxe",
    "make_stone_sword",
    "make_wood_pickaxe",
    "make_wood_sword",
    "place_furnace",
    "place_plant",
    "place_stone",
    "place_table",
    "wake_up",
)
N_ACTIONS = 17
FACINGS: tuple[tuple[int, int], ...] = ((-1, 0), (1, 0), (0, -1), (0, 1))  # W, E, N, S

#: The mission text of each single-task variant (lowercase, like BabyAI's missions).
TASK_MISSIONS: dict[str, str] = {
    "collect_coal": "collect coal",
    "collect_diamond": "collect a diamond",
    "collect_drink": "drink water",
    "collect_iron": "collect iron",
    "collect_sapling": "collect a sapling",
    "collect_stone": "collect stone",
    "collect_wood": "collect wood",
    "defeat_skeleton": "defeat a skeleton",
    "defeat_zombie": "defeat a zombie",
    "eat_cow": "eat a cow",
    "eat_plant": "eat a plant",
    "make_iron_pickaxe": "make an iron pickaxe",
    "make_iron_sword": "make an iron sword",
    "make_stone_pickaxe": "make a stone pickaxe",
    "make_stone_sword": "make a stone sword",
    "make_wood_pickaxe": "make a wood pickaxe",
    "make_wood_sword": "make a wood sword",
    "place_furnace": "place a furnace",
    "place_plant": "place a plant",
    "place_stone": "place stone",
    "place_table": "place a crafting table",
    "wake_up": "wake up",
}
FULL_GAME_MISSION = "unlock as many achievements as you can"

#: What each achievement reads as in ``info["achieved"]``: the goal vocabulary's own words
#: (:data:`env_registry.crafter.vocabulary.GOALS`), so that an achievement matches the suggestion
#: of the same goal exactly (ELLM's reward compares the two texts).
ACHIEVED_TEXT: dict[str, str | None] = {
    "collect_coal": "collect coal",
    "collect_diamond": "collect diamond",
    "collect_drink": "drink water",
    "collect_iron": "collect iron",
    "collect_sapling": "collect sapling",
    "collect_stone": "collect stone",
    "collect_wood": "collect wood",
    "defeat_skeleton": "attack skeleton",
    "defeat_zombie": "attack zombie",
    "eat_cow": "eat cow",
    "eat_plant": "eat plant",
    "make_iron_pickaxe": "make iron pickaxe",
    "make_iron_sword": "make iron sword",
    "make_stone_pickaxe": "make stone pickaxe",
    "make_stone_sword": "make stone sword",
    "make_wood_pickaxe": "make wood pickaxe",
    "make_wood_sword": "make wood sword",
    "place_furnace": "place furnace",
    "place_plant": "place plant",
    "place_stone": "place stone",
    "place_table": "place crafting table",
    # wake_up has no goal text of its own: the goal "sleep" is reported when the player falls
    # asleep (SLEEP_TEXT), the step on which ELLM pays its "sleep" goal (its reward matches
    # the action taken), and the step after the state whose suggestions can include it (the
    # oracle suggests sleep to a sleepy player who is awake). Waking up comes hundreds of
    # steps later, from a state where nothing suggests sleeping.
    "wake_up": None,
}
SLEEP_TEXT = "sleep"

VIEW_COLS, VIEW_ROWS = 9, 7  # the part of crafter's 9×9 view that shows the world
N_SEMANTIC = len(MATERIALS) + len(OBJECTS)  # 18; id 0 (outside the world) has no slot
OBS_SIZE = VIEW_ROWS * VIEW_COLS * N_SEMANTIC + len(ITEMS) + len(FACINGS) + 2

#: Semantic id -> caption name ("" outside the world), as an array for vectorised lookup.
_NAMES = np.array(("", *MATERIALS, *OBJECTS), dtype=object)
#: Semantic id -> one-hot row; id 0 maps to all zeros.
_ONE_HOT = np.eye(N_SEMANTIC + 1, dtype=np.float32)[:, 1:]
_FACING_INDEX = {f: i for i, f in enumerate(FACINGS)}
_ITEM_SCALE = np.float32(1.0 / 9.0)


@functools.cache
def _headless_crafter() -> type:
    """``crafter.Env`` minus the per-step frame and semantic map (built on first use, so that
    importing this module does not import crafter)."""
    import crafter
    from crafter import constants

    for ours, theirs in (
        (MATERIALS, constants.materials),
        (ITEMS, tuple(constants.items)),
        (ACHIEVEMENTS, tuple(constants.achievements)),
    ):
        if tuple(theirs) != ours:
            raise RuntimeError(
                f"crafter's vocabulary changed ({theirs}); this module expects 1.8.3"
            )

    obj = crafter.objects
    creatures = (obj.Player, obj.Cow, obj.Zombie, obj.Skeleton, obj.Arrow, obj.Plant)

    class HeadlessCrafter(crafter.Env):
        """Draws a frame only when ``render()`` is called, and the semantic map only when
        built with ``semantic=True``. The rules are crafter 1.8.3's; only the choice of which
        creature despawns is made deterministic."""

        #: Object class -> semantic id, numbered as crafter's SemanticView numbers them.
        OBJECT_IDS: dict[type, int] = {  # noqa: RUF012
            cls: len(MATERIALS) + 1 + i for i, cls in enumerate(creatures)
        }

        def __init__(self, *, semantic: bool = False, **kwargs: Any):
            super().__init__(**kwargs)
            self._semantic = semantic

        def _obs(self) -> None:
            return None  # reset() asks for a frame; nobody reads it

        def reset(self) -> None:
            # crafter.Env.reset, with its world generation vectorised (the same worlds).
            from env_registry.crafter.worldgen import generate_world

            center = (self._world.area[0] // 2, self._world.area[1] // 2)
            self._episode += 1
            self._step = 0
            self._world.reset(seed=hash((self._seed, self._episode)) % (2**31 - 1))
            self._update_time()
            self._player = obj.Player(self._world, center)
            self._last_health = self._player.health
            self._world.add(self._player)
            self._unlocked = set()
            generate_world(self._world, self._player)
            return self._obs()

        def render(self, size: Any = None) -> np.ndarray:
            # The night-time noise in crafter's frames is drawn from the world's RNG; keep
            # the game independent of whether anyone looks at it.
            state = self._world.random.get_state()
            try:
                return super().render(size)
            finally:
                self._world.random.set_state(state)

        def _balance_chunk(self, chunk: tuple[int, int, int, int], objs: set) -> None:
            # crafter keeps each chunk's objects in a set, which iterates in memory-address
            # order, and picks the creature to despawn by index into it: two envs with the
            # same seed then drift apart after a few dozen steps. Creation order fixes that.
            index = self._world._obj_map
            super()._balance_chunk(chunk, sorted(objs, key=lambda o: index[tuple(o.pos)]))

        def step(self, action: int):
            # crafter.Env.step, less the frame and (unless asked) the semantic map.
            self._step += 1
            self._update_time()
            player = self._player
            player.action = constants.actions[action]
            reach = 2 * max(self._view)
            for obj in self._world.objects:
                # player.distance(obj) < reach, on Python ints: 10x cheaper than numpy's
                # abs().sum() on 2-vectors, which was half the cost of a step.
                (ox, oy), (px, py) = obj.pos.tolist(), player.pos.tolist()
                if abs(ox - px) + abs(oy - py) < reach:
                    obj.update()
            if self._step % 10 == 0:
                for chunk, objs in self._world.chunks.items():
                    self._balance_chunk(chunk, objs)
            reward = (player.health - self._last_health) / 10
            self._last_health = player.health
            unlocked = {
                name
                for name, count in player.achievements.items()
                if count > 0 and name not in self._unlocked
            }
            if unlocked:
                self._unlocked |= unlocked
                reward += 1.0
            dead = player.health <= 0
            over = bool(self._length) and self._step >= self._length
            info = {
                "inventory": player.inventory.copy(),
                "achievements": player.achievements.copy(),
                "discount": 1 - float(dead),
                "player_pos": player.pos,
                "reward": reward,
            }
            if self._semantic:
                info["semantic"] = self._sem_view()
            if not self._reward:
                reward = 0.0
            return None, reward, dead or over, info

    return HeadlessCrafter


class CrafterTextEnv(gym.Env):
    """Crafter with a flat float32 observation and a caption in ``info`` (see module docstring).

    Args (env_config keys):
        caption: write ``info["caption"]`` (default True; ``""`` when False).
        render_pixels: ``render()`` returns the RGB frame and ``info`` carries crafter's
            ``semantic`` map (default False: neither is computed).
        caption_style: ``"smartplay"`` (default, BK's layout) or ``"ellm"``.
        task: None for the full game, or an achievement name for a single-task variant.
        length: the episode length limit, after which ``truncated`` is True (default 10000,
            as crafter and BK; ELLM used 400). 0 or None: no limit.
        area: the world size (default ``(64, 64)``).
        size: the rendered frame size in pixels (default ``(64, 64)``).
        seed: the seed of the first unseeded reset's world stream (default: fresh entropy).
    """

    metadata: ClassVar[dict[str, Any]] = {"render_modes": ["rgb_array"], "render_fps": 10}

    def __init__(self, env_config: Mapping[str, Any] | None = None):
        config = dict(env_config or {})
        self._caption = bool(config.get("caption", True))
        self._render_pixels = bool(config.get("render_pixels", False))
        self.render_mode = "rgb_array" if self._render_pixels else None
        style = config.get("caption_style", "smartplay")
        if style not in CAPTIONERS:
            raise ValueError(f"caption_style must be one of {sorted(CAPTIONERS)}, not {style!r}")
        self._captioner = CAPTIONERS[style]
        self._task = config.get("task")
        if self._task is not None and self._task not in TASK_MISSIONS:
            raise ValueError(f"task must be None or one of {ACHIEVEMENTS}, not {self._task!r}")
        self._mission = FULL_GAME_MISSION if self._task is None else TASK_MISSIONS[self._task]
        length = config.get("length", 10000)
        seed = config.get("seed")
        if seed is None:
            seed = int(np.random.SeedSequence().generate_state(1)[0]) % (2**31 - 1)
        self._game = _headless_crafter()(
            area=tuple(config.get("area", (64, 64))),
            size=tuple(config.get("size", (64, 64))),
            length=int(length) if length else None,
            seed=int(seed),
            semantic=self._render_pixels,
        )
        self._object_ids = self._game.OBJECT_IDS
        self.observation_space = gym.spaces.Box(0.0, 1.0, (OBS_SIZE,), np.float32)
        self.action_space = gym.spaces.Discrete(N_ACTIONS)
        self._success = False
        self._last_achievements: dict[str, int] = dict.fromkeys(ACHIEVEMENTS, 0)
        self._was_sleeping = False

    # ----------------------------------------------------------------------------------------
    def local_view_ids(self) -> np.ndarray:
        """Semantic ids of the 7×9 local view, ``[row, col]`` with row 0 north (0 = outside)."""
        world, (px, py) = self._game._world, self._game._player.pos
        x0, y0 = int(px) - VIEW_COLS // 2, int(py) - VIEW_ROWS // 2
        width, height = world.area
        xa, xb = max(x0, 0), min(x0 + VIEW_COLS, width)
        ya, yb = max(y0, 0), min(y0 + VIEW_ROWS, height)
        ids = np.zeros((VIEW_COLS, VIEW_ROWS), np.intp)  # crafter's [x, y] until the end
        ids[xa - x0 : xb - x0, ya - y0 : yb - y0] = world._mat_map[xa:xb, ya:yb]
        occupied = world._obj_map[xa:xb, ya:yb]
        for i, j in zip(*occupied.nonzero()):
            obj_id = self._object_ids.get(type(world._objects[occupied[i, j]]))
            if obj_id is not None:
                ids[xa - x0 + i, ya - y0 + j] = obj_id
        return ids.T

    def local_view_names(self) -> list[list[str]]:
        """The local view as caption names, ``[row][col]`` (``""`` outside the world)."""
        return _NAMES[self.local_view_ids()].tolist()

    def _observe(self, game_info: Mapping[str, Any] | None) -> tuple[np.ndarray, dict]:
        player = self._game._player
        ids = self.local_view_ids()
        obs = np.empty(OBS_SIZE, np.float32)
        n = VIEW_ROWS * VIEW_COLS * N_SEMANTIC
        obs[:n] = _ONE_HOT[ids].reshape(-1)
        inventory = dict(player.inventory)
        obs[n : n + len(ITEMS)] = np.fromiter(inventory.values(), np.float32, len(ITEMS))
        obs[n : n + len(ITEMS)] *= _ITEM_SCALE
        n += len(ITEMS)
        obs[n : n + len(FACINGS)] = 0.0
        obs[n + _FACING_INDEX[tuple(int(v) for v in player.facing)]] = 1.0
        n += len(FACINGS)
        obs[n] = self._game._world.daylight
        obs[n + 1] = float(player.sleeping)

        achievements = dict(player.achievements)
        # crafter counts every occurrence, so a count that rose is something done this step.
        last = self._last_achievements
        achieved: list[str] = []
        if game_info is not None:  # reset: nothing done yet
            achieved = [
                ACHIEVED_TEXT[k]
                for k, count in achievements.items()
                if count > last[k] and ACHIEVED_TEXT[k]
            ]
            if player.sleeping and not self._was_sleeping:
                achieved.append(SLEEP_TEXT)
        self._was_sleeping = bool(player.sleeping)
        self._last_achievements = achievements.copy()  # info's dict is the caller's to change
        info: dict[str, Any] = {
            "caption": "",
            "mission": self._mission,
            "success": self._success,
            "achieved": achieved,
            "achievements": achievements,
            "achievements_unlocked": sorted(k for k, v in achievements.items() if v > 0),
            "inventory": inventory,
            "player_pos": (int(player.pos[0]), int(player.pos[1])),
        }
        if self._caption:
            names = _NAMES[ids].tolist()
            info["caption"] = self._captioner(names, player.facing, inventory, player.sleeping)
        if self._render_pixels:
            info["semantic"] = (
                game_info["semantic"] if game_info is not None else self._game._sem_view()
            )
        return obs, info

    # ----------------------------------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        if seed is not None:
            # crafter draws episode k's world from hash((seed, k)): restart that stream.
            self._game._seed = int(seed)
            self._game._episode = 0
        self._game.reset()
        self._success = False
        return self._observe(None)

    def step(self, action):
        _, reward, _, game_info = self._game.step(int(action))
        terminated = game_info["discount"] == 0.0  # the player died
        truncated = bool(self._game._length) and self._game._step >= self._game._length
        if self._task is not None:
            reward = 0.0
            if not self._success and game_info["achievements"][self._task] > 0:
                self._success = True
                reward = 1.0
            terminated = terminated or self._success
        obs, info = self._observe(game_info)
        return obs, float(reward), bool(terminated), bool(truncated and not terminated), info

    def render(self) -> np.ndarray | None:
        return self._game.render() if self._render_pixels else None


def make_crafter_text_env(env_config: Mapping[str, Any]) -> gym.Env:
    return CrafterTextEnv(env_config)


# --------------------------------------------------------------------------------------------
# Registered names
# --------------------------------------------------------------------------------------------
def _spec(name: str, description: str, **defaults: Any) -> EnvSpec:
    base = {"length": 10000, "caption_style": "smartplay", "task": None}
    return EnvSpec(
        name=name,
        family="crafter",
        make=make_crafter_text_env,
        defaults={**base, **defaults},
        description=description,
    )


SPECS: list[EnvSpec] = [
    _spec(
        "Crafter-Text-v0",
        "the full Crafter game, 22 achievements, crafter's reward, 10000 steps (BK)",
    ),
    _spec(
        "Crafter-Text-ELLM-v0",
        "the full Crafter game with ELLM's caption wording, 400 steps (ELLM)",
        caption_style="ellm",
        length=400,
    ),
    _spec(
        "Crafter-Text-PlaceTable-v0",
        "place a crafting table; +1 and done when placed (BK single task)",
        task="place_table",
    ),
    _spec(
        "Crafter-Text-MakeWoodPickaxe-v0",
        "make a wood pickaxe; +1 and done when made (BK single task)",
        task="make_wood_pickaxe",
    ),
    _spec(
        "Crafter-Text-CollectDrink-v0",
        "drink water; +1 and done on the first drink (BK single task)",
        task="collect_drink",
    ),
    _spec(
        "Crafter-Text-EatCow-v0",
        "eat a cow; +1 and done when eaten (BK single task)",
        task="eat_cow",
    ),
]
