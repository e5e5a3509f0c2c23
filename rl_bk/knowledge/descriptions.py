"""What a code-writing LLM is told about each env: the game, the exact caption format, the
action names, the window its function reads, and the function it must write.

The code an LLM writes can only be as good as its picture of the input, so these texts
describe the captions our captioners really produce (``env_registry.<family>.captioner``),
with examples in their exact wording, and the action names of
:data:`rl_bk.knowledge.trajectory.ACTION_NAMES`. The wording is ours; BK's prompts described
minigrid's numeric observation instead.

The mission: BK withheld the task goal from the LLM ("you will not know the specific task")
to test background knowledge alone. :func:`describe_env` states the mission when it is given,
and callers give it by default, because each of our tasks has one fixed mission and a
potential aimed at it is what shaping needs; pass ``mission=None`` for BK's setting.

The text ends with the function's contract and the mission: a prompt that must shorten a
description keeps its end. :func:`window_records` builds the argument the contract promises.
"""

from __future__ import annotations

from rl_bk.knowledge.trajectory import ACTION_NAMES, Window, action_name

FUNCTION_NAME = "compute_potential"
SIGNATURE = f"def {FUNCTION_NAME}(window: list[dict]) -> float"


def window_records(window: Window, family: str | None) -> list[dict]:
    """A window as the function's argument, exactly as the description promises: oldest
    first, ``{"caption", "action"}`` per state, the current state's action None."""
    records = [{"caption": c, "action": action_name(family, a)}
               for c, a in zip(window.captions[:-1], window.actions)]  # fmt: skip
    records.append({"caption": window.captions[-1], "action": None})
    return records


_BABYAI = """\
Game: BabyAI-Text, a grid world of rooms joined by doors, seen from the agent's own point of \
view. The agent sees a 7 by 7 square of cells in front of it (it stands at the middle of the \
square's back edge, facing forward); walls and closed doors hide what lies behind them. It \
can carry one object at a time.

Each observation is a caption: sentences joined by ". " and ending with ".", in this order:
1. The nearest wall straight ahead, on the left and on the right, when in view: \
"You see a wall 3 steps forward", "You see a wall 1 step right".
2. Every visible object, nearest first, with how far it is sideways and ahead of the agent: \
"You see a grey box 2 steps left", "You see a red ball 1 step right and 4 steps forward", \
"You see a green key 2 steps forward". An object at "1 step forward" with no sideways offset \
is in the cell right in front of the agent.
3. Doors the same way, with their state before the color: "You see a closed blue door 3 steps \
forward", "You see a locked yellow door 1 step left and 2 steps forward" (open, closed or \
locked).
4. "You see nothing in front" when none of the above is in view.
5. Last, the carried object, if any: "You carry a purple key".
Colors: red, green, blue, purple, yellow, grey. Objects: ball, box, key, and doors. Offsets \
are whole steps ("1 step", "2 steps").

Actions: {actions}. Turning changes the agent's direction, not its cell, so every offset in \
the caption changes after a turn. Going forward into a wall or an object does nothing. Picking \
up and toggling act only on the cell right in front; toggling opens or closes a door, and a \
locked door opens only while the agent carries the key of the same color. The episode ends \
when the mission is done or after a step limit, and a faster success earns more reward.
"""

_CRAFTER_SMARTPLAY = """\
Each observation is a caption, for example: "You see: water 1 step to your east, tree 2 steps \
to your north-west, cow 5 steps to your south. You face water to your east. Health 9/9, food \
7/9, drink 5/9, energy 9/9. You have 2 wood, 1 sapling."
- "You see: ..." names each kind of thing in view once, at its nearest occurrence, nearest \
first, with its distance in steps (sideways plus vertical) and a compass direction (north is \
up); "You see nothing around you." when the view is empty.
- "You face X to your <direction>." names the cell the player faces: "do" acts on it.
- The four vitals, each out of 9.
- "You have 2 wood, 1 sapling." lists the inventory with counts, or "You have nothing in your \
inventory."
- "You are sleeping." or "You died." comes first when it applies.
"""

_CRAFTER_ELLM = """\
Each observation is a lowercase caption, for example: "you see cow, grass, tree, and water. \
you are targeting water. you have in your inventory wood and plant. you feel hungry and \
thirsty."
- "you see ..." names the kinds of things in view, sorted, without positions or counts.
- "you are targeting X." names the cell the player faces ("do" acts on it); left out when it \
faces plain ground.
- "you have in your inventory ..." names the held items, without counts ("plant" is a \
sapling, "crafting table" a table); left out when empty.
- "you feel hungry / thirsty / sleepy / hurt" reports each vital below its maximum.
"""

_CRAFTER = """\
Game: Crafter-Text, a 2D survival and crafting game. The player walks a 64 by 64 world of \
grass, sand, water, trees, stone, coal, iron, diamonds and lava, with cows, zombies and (in \
caves) skeletons, and sees the 9 by 7 cells around itself.
Vitals: health, food, drink and energy, each from 0 to 9. Food comes from eating cows or \
ripe plants, drink from drinking water, energy from sleeping; health recovers while the others \
are above zero and falls when they are empty or when the player is attacked. Health 0 ends the \
episode.
Progress follows a tech tree: collect wood from trees; place a table (2 wood); at a nearby \
table make a wood pickaxe or sword (1 wood each); mine stone and coal with the wood pickaxe; \
place a furnace (stone, near a table); make a stone pickaxe or sword (wood and stone, near a \
table); mine iron with the stone pickaxe; make an iron pickaxe or sword (wood, coal and iron, \
near a table and a furnace); mine diamonds with the iron pickaxe. Other achievements: collect \
a sapling, place it, eat a plant, eat a cow, drink water, sleep and wake up, defeat a zombie \
or a skeleton, place stone. Each first unlock of an achievement earns reward.

{captions}
Actions: {actions}. The moves go west, east, north and south, and turn the player to face \
that way; "do" collects, mines, attacks, eats or drinks what the player faces.
"""

_CONTRACT = """\
Write a potential function for reward shaping. The agent is rewarded for raising the \
potential from one state to the next, so it should grow as the agent makes real progress \
{toward} and should not pay for wandering or for repeating the same action.

{signature}
`window` is the recent history, oldest first: at least 1 and at most {horizon} states (fewer \
at the start of an episode). Each item is a dict {{"caption": str, "action": str | None}}: a \
state's caption and the action the agent took in that state. The last item is the current \
state; its "action" is None. Return the potential of the current state, one finite float, \
ideally between 0 and 1.

The function runs in a sandbox with a time limit: no files, no network, no other programs. It \
may import only standard modules such as math, re, collections, itertools, functools, \
statistics and string, and numpy; math, re and np (numpy) are already defined.
"""


def describe_env(family: str, mission: str | None = None, *, horizon: int = 5,
                 caption_style: str = "smartplay") -> str:  # fmt: skip
    """The env description a code writer receives (``RewardCodeRequest.env_description``).

    Args:
        family: ``"babyai"`` or ``"crafter"``.
        mission: the task's mission text, stated last; None withholds it (BK's setting).
        horizon: the most states a window holds.
        caption_style: Crafter only: ``"smartplay"`` (the default env's) or ``"ellm"``.
    """
    actions = ", ".join(ACTION_NAMES[family]) if family in ACTION_NAMES else ""
    if family == "babyai":
        game = _BABYAI.format(actions=actions)
    elif family == "crafter":
        if caption_style not in ("smartplay", "ellm"):
            raise ValueError(f"caption_style must be 'smartplay' or 'ellm', not {caption_style!r}")
        captions = _CRAFTER_SMARTPLAY if caption_style == "smartplay" else _CRAFTER_ELLM
        game = _CRAFTER.format(captions=captions, actions=actions)
    else:
        raise ValueError(f"no description for env family {family!r}; known: babyai, crafter")
    mission = " ".join(mission.split()).rstrip(".") if mission else None
    toward = "toward its mission" if mission else "in the game"
    text = game + "\n" + _CONTRACT.format(toward=toward, signature=SIGNATURE, horizon=horizon)
    if mission:
        text += f"\nThe agent's mission: {mission}."
    else:
        text += (
            "\nThe mission is not given: reward what helps in this game in general (progress, "
            "useful interactions), not one particular goal."
        )
    return text
