"""What a code-writing LLM is told about each env: the game, the exact caption format and the
action names (each family's ``description.py`` in ``env_registry``), then BK-Code's contract
(the window its function reads, the function it must write) and, only where given, the
mission (BK withheld it, to test background knowledge alone). The text ends with the contract
and the mission, so a prompt that must shorten a description keeps its end.
"""

from __future__ import annotations

from env_registry.babyai import description as babyai
from env_registry.crafter import description as crafter
from rl_bk.knowledge.trajectory import Window, action_name

FUNCTION_NAME = "compute_potential"
SIGNATURE = f"def {FUNCTION_NAME}(window: list[dict]) -> float"


def window_records(window: Window, family: str | None) -> list[dict]:
    """A window as the function's argument, exactly as the description promises: oldest
    first, ``{"caption", "action"}`` per state, the current state's action None."""
    records = [
        {"caption": c, "action": action_name(family, a)}
        for c, a in zip(window.captions[:-1], window.actions)
    ]
    records.append({"caption": window.captions[-1], "action": None})
    return records


_CONTRACT = """\
Write a potential function for reward shaping. The agent is rewarded for raising the \
potential from one state to the next, so it should grow as the agent makes real progress \
{toward} and should not pay for wandering or for repeating the same action.

{signature}
`window` is the recent history, oldest first: at least 1 and at most {horizon} states (near \
the start of an episode it may be shorter, or begin with repeats of the episode's first \
state). Each item is a dict {{"caption": str, "action": str | None}}: a \
state's caption and the action the agent took in that state. The last item is the current \
state; its "action" is None. Return the potential of the current state, one finite float, \
ideally between 0 and 1.

The function runs in a sandbox with a time limit: no files, no network, no other programs. It \
may import only standard modules such as math, re, collections, itertools, functools, \
statistics and string, and numpy; math, re and np (numpy) are already defined.
"""


def describe_env(
    family: str, mission: str | None = None, *, horizon: int = 5, caption_style: str = "smartplay"
) -> str:
    """The env description a code writer receives (``RewardCodeRequest.env_description``).

    Args:
        family: ``"babyai"`` or ``"crafter"``.
        mission: the task's mission text, stated last; None withholds it (BK's setting).
        horizon: the most states a window holds.
        caption_style: Crafter only: ``"smartplay"`` (the default env's) or ``"ellm"``.
    """
    if family == "babyai":
        game = babyai.CODE_WRITER_DESCRIPTION
    elif family == "crafter":
        game = crafter.code_writer_description(caption_style)
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
