"""What an LLM is told about NetHack: :data:`LABELER_DESCRIPTION`, one line in every
labelling prompt (goals, preference, helpful), so that a small model knows which game it
judges, and :data:`LABELER_GOAL_EXAMPLES`, the two goals the goals prompt shows."""

from __future__ import annotations

LABELER_DESCRIPTION = (
    "NetHack, a dungeon game: explore, collect gold, kill monsters, go down the "
    "stairs and stay alive."
)
LABELER_GOAL_EXAMPLES: tuple[str, str] = ("descend the stairs", "pick up the gold")
