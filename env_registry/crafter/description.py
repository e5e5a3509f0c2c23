"""What an LLM is told about Crafter, at the two lengths its two readers need:

- :data:`LABELER_DESCRIPTION`: one line in every labelling prompt (goals, preference,
  helpful), so that a small model knows which game it judges; :data:`LABELER_GOAL_EXAMPLES`,
  the two goals the goals prompt shows.
- :func:`code_writer_description`: the game, the exact caption format (per caption style)
  and the action names, for an LLM that writes a potential function over captions
  (BK-Code); the function's contract is added by
  ``rl_bk.methods.bk.code.descriptions``. It describes the captions :mod:`.captioner`
  really writes, with examples in their exact wording: a change of caption wording goes with
  a change here.
"""

from __future__ import annotations

from env_registry.crafter.vocabulary import ACTION_NAMES

LABELER_DESCRIPTION = (
    "Crafter, a 2D survival game: collect wood, stone, coal, iron and diamond, "
    "build a table and a furnace, make tools, and keep health, food, drink and energy up."
)
LABELER_GOAL_EXAMPLES: tuple[str, str] = ("collect wood", "place crafting table")

_SMARTPLAY_CAPTIONS = """\
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

_ELLM_CAPTIONS = """\
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

_CODE_WRITER_TEMPLATE = """\
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


def code_writer_description(caption_style: str = "smartplay") -> str:
    """The game as a code writer sees it, captions in ``caption_style`` (``"smartplay"``, the
    default env's, or ``"ellm"``)."""
    if caption_style not in ("smartplay", "ellm"):
        raise ValueError(f"caption_style must be 'smartplay' or 'ellm', not {caption_style!r}")
    captions = _SMARTPLAY_CAPTIONS if caption_style == "smartplay" else _ELLM_CAPTIONS
    return _CODE_WRITER_TEMPLATE.format(captions=captions, actions=", ".join(ACTION_NAMES))
