"""What an LLM is told about BabyAI, at the two lengths its two readers need:

- :data:`LABELER_DESCRIPTION`: one line in every labelling prompt (goals, preference,
  helpful), so that a small model knows which game it judges; :data:`LABELER_GOAL_EXAMPLES`,
  the two goals the goals prompt shows.
- :data:`CODE_WRITER_DESCRIPTION`: the game, the exact caption format and the action names,
  for an LLM that writes a potential function over captions (BK-Code); the function's
  contract is added by ``rl_bk.methods.bk.code.descriptions``. It describes the
  captions :mod:`.captioner` really writes, with examples in their exact wording: a change
  of caption wording goes with a change here. The wording is ours; BK's prompts described
  minigrid's numeric observation instead.
"""

from __future__ import annotations

from env_registry.babyai.vocabulary import ACTION_NAMES

LABELER_DESCRIPTION = (
    "BabyAI, a grid world: the agent sees a 7x7 area in front of it with balls, "
    "boxes, keys and doors in six colours, and must follow a mission."
)
LABELER_GOAL_EXAMPLES: tuple[str, str] = ("go to the red ball", "open the blue door")

_CODE_WRITER_TEMPLATE = """\
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
CODE_WRITER_DESCRIPTION = _CODE_WRITER_TEMPLATE.format(actions=", ".join(ACTION_NAMES))
