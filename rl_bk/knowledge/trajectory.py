"""Trajectory pieces as every knowledge source sees them, one contract for the dataset
(offline) and for the learner's train batches: a :class:`Chunk` is ``n`` consecutive steps of
one episode (``n + 1`` states, ``n`` actions), and a potential source maps chunks to ``n + 1``
potentials each. :func:`windows` gives each state the short history BK's potentials read, cut
at the chunk's start; in training the shaping term puts the states before a chunk's first in
front of it, and BK's padding before an episode's first
(:class:`rl_bk.methods.bk.potential_shaping.WindowHistory`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from env_registry.babyai import vocabulary as babyai_vocabulary
from env_registry.crafter import vocabulary as crafter_vocabulary

#: Text for each action id, per env family (each family's ``vocabulary.py``).
ACTION_NAMES: dict[str, tuple[str, ...]] = {
    "babyai": babyai_vocabulary.ACTION_NAMES,
    "crafter": crafter_vocabulary.ACTION_NAMES,
}


def action_name(family: str | None, action: int) -> str:
    names = ACTION_NAMES.get(family or "")
    if names is not None and 0 <= int(action) < len(names):
        return names[int(action)]
    return f"action {int(action)}"


@dataclass
class Chunk:
    """``n`` steps of one episode. ``observations``: (n+1, obs_dim) float32; ``captions``:
    n+1 strings; ``actions``: (n,) int64; ``rewards``: (n,) extrinsic; ``terminated``: whether
    the last step ended the episode; ``mission``: the task text, if the env has one."""

    observations: np.ndarray
    captions: list[str]
    actions: np.ndarray
    rewards: np.ndarray = field(default_factory=lambda: np.zeros(0, np.float32))
    terminated: bool = False
    truncated: bool = False
    mission: str | None = None
    episode_id: str = ""

    def __post_init__(self) -> None:
        self.observations = np.asarray(self.observations, dtype=np.float32)
        self.actions = np.asarray(self.actions, dtype=np.int64).reshape(-1)
        n = len(self.actions)
        if len(self.rewards) == 0 and n:
            self.rewards = np.zeros(n, np.float32)
        self.rewards = np.asarray(self.rewards, dtype=np.float32).reshape(-1)
        if len(self.observations) != n + 1 or len(self.captions) != n + 1 or len(self.rewards) != n:
            raise ValueError(
                f"a chunk of {n} steps needs {n + 1} observations and captions and {n} rewards; "
                f"got {len(self.observations)}, {len(self.captions)} and {len(self.rewards)}"
            )

    def __len__(self) -> int:
        return len(self.actions)


@dataclass(frozen=True)
class Window:
    """The history a potential of state ``t`` reads: ``captions`` of states t-k+1..t (the
    last is the current state), ``actions`` taken between them (one fewer), and the matching
    ``observations`` rows."""

    captions: list[str]
    actions: list[int]
    observations: np.ndarray


def windows(chunk: Chunk, horizon: int) -> list[Window]:
    """One window per state of the chunk (``len(chunk) + 1``), each at most ``horizon`` states."""
    if horizon < 1:
        raise ValueError(f"horizon must be >= 1, got {horizon}")
    out = []
    for t in range(len(chunk) + 1):
        start = max(0, t - horizon + 1)
        out.append(
            Window(
                list(chunk.captions[start : t + 1]),
                [int(a) for a in chunk.actions[start:t]],
                chunk.observations[start : t + 1],
            )
        )
    return out


def window_index(
    chunks: Sequence[Chunk], horizon: int, no_action: int
) -> tuple[np.ndarray, np.ndarray]:
    """Every window of every chunk (``len(chunk) + 1`` each, in order) as arrays, right-aligned
    in ``horizon`` slots (the current state in the last): ``index`` (N, horizon) of each slot's
    state among all chunks' states stacked in order, -1 on padding; ``actions`` (N, horizon),
    the action taken at each slot's state, ``no_action`` on the current state and on padding."""
    if horizon < 1:
        raise ValueError(f"horizon must be >= 1, got {horizon}")
    index, actions = [np.zeros((0, horizon), np.int64)], [np.zeros((0, horizon), np.int64)]
    offset = 0
    slot = np.arange(horizon)[None, :]
    for c in chunks:
        n = len(c) + 1
        state = np.arange(n)[:, None] - (horizon - 1) + slot  # (n, horizon), negative: padding
        ok = state >= 0
        taken = np.append(c.actions, no_action)[np.clip(state, 0, None)]
        actions.append(np.where(ok & (slot < horizon - 1), taken, no_action))
        index.append(np.where(ok, state + offset, -1))
        offset += n
    return np.concatenate(index).astype(np.int64), np.concatenate(actions).astype(np.int64)


def step_text(caption: str, action: int, family: str | None) -> str:
    """BK's text of one step: "<caption> You choose the action: <name>."."""
    return f"{caption.strip()} You choose the action: {action_name(family, action)}."


def caption_history(window: Window, family: str | None) -> str:
    """BK's text of a window: "Step i: <caption> You choose the action: <a>." ... then
    "Current observation: <caption>"."""
    lines = [
        f"Step {i + 1}: {step_text(c, a, family)}"
        for i, (c, a) in enumerate(zip(window.captions[:-1], window.actions))
    ]
    lines.append(f"Current observation: {window.captions[-1]}")
    return "\n".join(lines)


def flat(chunks: Sequence[Chunk], horizon: int) -> list[Window]:
    """All windows of all chunks, in order (for one batched call to a model)."""
    return [w for c in chunks for w in windows(c, horizon)]
