"""What each labeller's BK knowledge holds, beside a reference labeller's (the oracle's): the
comparison ``rl-bk knowledge compare`` prints for the bk-* kinds (:func:`code_lines`,
:func:`preference_lines`, :func:`goal_lines`). Each function takes the artifact folders by
labeller (None where that labeller's is not built, which it says) and returns markdown lines.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
from scipy import stats

from rl_bk.knowledge.trajectory import Chunk
from rl_bk.methods.bk.code.potential import CodePotential
from rl_bk.methods.bk.goals.builder import GOALS_FILE, normalize_goal


def code_lines(
    folders: Mapping[str, Path | None], reference: str, episodes: Sequence[Chunk]
) -> list[str]:
    """BK-Code: each final code, and the Spearman rank correlation of its potential with the
    reference's over the states of ``episodes``."""
    lines = ["## BK-Code", ""]
    potentials = {}
    for b, folder in folders.items():
        if folder is None:
            lines += [f"{b}: not built.", ""]
            continue
        code = (folder / "code-final.py").read_text()
        lines += [f"{b} (`{folder.name}`), the final code:", "", "```python", code.rstrip()]
        lines += ["```", ""]
        potential = CodePotential.from_dir(folder)
        try:
            potentials[b] = np.concatenate(potential(episodes))
        finally:
            potential.close()
    if reference not in potentials:
        return lines
    ref = potentials[reference]
    where = f"over the {len(ref):,} states of the dataset's first {len(episodes)} episodes"
    for b, values in potentials.items():
        if b == reference:
            continue
        if np.ptp(values) == 0:
            lines.append(
                f"{b}'s potential is the constant {values[0]:g} {where}: "
                + ("it shapes nothing" if values[0] == 0 else "no state ranks above another")
                + " (no rank correlation with the reference's)."
            )
        elif np.ptp(ref) == 0:
            lines.append(f"{reference}'s potential is constant {where}: no rank correlation.")
        else:
            rho = stats.spearmanr(values, ref).statistic
            lines.append(
                f"Spearman rank correlation of {b}'s potential with {reference}'s {where}: "
                f"{rho:+.3f} ({b}'s takes {len(np.unique(values))} distinct values)."
            )
    return [*lines, ""]


def preference_lines(
    folders: Mapping[str, Path | None], reference: str, choices: Mapping[str, list[str | None]]
) -> list[str]:
    """BK-Pref: the segment pairs the builds labelled, each labeller's answers, their
    agreement with the reference's, and each preference model's held-out accuracy on its own
    labels (its ``report.json``). ``choices``: each built labeller's answer ("A", "B", "tie";
    None: failed) on the same pairs, in order, read back from the label store."""
    lines = ["## BK-Pref", ""]
    lines += [line for b in folders if b not in choices for line in (f"{b}: not built.", "")]
    if not choices:
        return lines
    lines += [
        "| labeller | pairs labelled | A / B / tie | agreement with "
        f"{reference} (decided by both) | held-out accuracy (own labels, best epoch) |",
        "|---|---|---|---|---|",
    ]
    for b, mine in choices.items():
        counts = {c: sum(x == c for x in mine) for c in ("A", "B", "tie")}
        agreement = "–"
        if reference in choices and b != reference:
            both = [(x, y) for x, y in zip(mine, choices[reference]) if {x, y} <= {"A", "B"}]
            if both:
                same = sum(x == y for x, y in both)
                agreement = f"{same / len(both):.3f} ({same}/{len(both)})"
        report = json.loads((folders[b] / "report.json").read_text())  # type: ignore[operator]
        accuracy, best = report.get("heldout_accuracy") or [], report.get("best_epoch")
        held = accuracy[best] if best is not None and best < len(accuracy) else None
        lines.append(
            f"| {b} | {sum(x is not None for x in mine)} | {counts['A']} / {counts['B']} / "
            f"{counts['tie']} | {agreement} | {'–' if held is None else f'{held:.3f}'} |"
        )
    return [*lines, ""]


def goal_lines(folders: Mapping[str, Path | None], reference: str) -> list[str]:
    """BK-Goal: each goal list, and how many of its goals the reference's list also holds."""
    lists, lines = {}, ["## BK-Goal", ""]
    for b, folder in folders.items():
        if folder is None:
            lines += [f"{b}: not built.", ""]
            continue
        lists[b] = json.loads((folder / GOALS_FILE).read_text())["goals"]
    ref = {normalize_goal(g) for g in lists.get(reference, [])}
    for b, goals in lists.items():
        shared = sum(normalize_goal(g) in ref for g in goals)
        also = f"; {shared} of them also in {reference}'s list" if ref and b != reference else ""
        lines += [f"{b}: {len(goals)} goals{also}:", "", *(f"- {g}" for g in goals), ""]
    return lines
