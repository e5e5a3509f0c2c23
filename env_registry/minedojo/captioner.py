"""MineDojo-Text captions: the block kinds around the agent, the item in hand, the inventory
and the life stats, in sentences:

    ``You see log, leaves and grass nearby. You hold a bucket. You have 2 log. Health 20/20,
    food 20/20.``

Pure Python over names and numbers, so it is tested without MineDojo.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any


def normalize_name(name: Any) -> str:
    """A MineDojo block or item name as captions write it: lowercase, spaces as underscores."""
    return str(name).strip().lower().replace(" ", "_")


def _join(words: Sequence[str]) -> str:
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]


def caption_minedojo(
    block_names: Sequence[str],
    inventory: Mapping[str, int],
    mainhand: str,
    health: float,
    food: float,
) -> str:
    """Describes the agent's surroundings and belongings.

    Args:
        block_names: names of the blocks around the agent (any order; air is skipped).
        inventory: item name -> count (air and zero counts skipped).
        mainhand: name of the item in hand ("air" for none).
        health, food: MineDojo's life stats (0 to 20).
    """
    sentences = []
    blocks = list(
        dict.fromkeys(normalize_name(b) for b in block_names if normalize_name(b) != "air")
    )
    sentences.append(f"You see {_join(blocks)} nearby" if blocks else "You see only air nearby")
    held = normalize_name(mainhand)
    if held and held != "air":
        sentences.append(f"You hold a {held.replace('_', ' ')}")
    items = [
        f"{n} {normalize_name(k)}"
        for k, n in inventory.items()
        if n > 0 and normalize_name(k) != "air"
    ]
    sentences.append(f"You have {_join(items)}" if items else "Your inventory is empty")
    sentences.append(f"Health {health:g}/20, food {food:g}/20")
    return ". ".join(sentences) + "."
