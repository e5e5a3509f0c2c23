"""What BK's knowledge was, beside a study's curves: each labeller's bk-* artifacts for one
task, read back and compared with a reference labeller's (the oracle's) on the same data.

    python -m studies.bk_knowledge qwen-bk     # -> studies/results/qwen-bk-knowledge.md

- BK-Code: the final code, and the Spearman rank correlation of its potential with the
  reference's over the states of the first episodes of the dataset both were written from;
- BK-Pref: the same segment pairs the builds labelled (:func:`preference_pairs`, seeded as a
  build seeds them), each labeller's answers read back from the label store (a pair labelled
  by the build is never asked again), their agreement with the reference's, and each
  preference model's held-out accuracy on its own labels (its ``report.json``);
- BK-Goal: each goal list, and the share of its goals the reference's list also holds.

The task is the plan's first part with the bk-* methods' knowledge settings (one artifact per
labeller serves every part: the knowledge is built on one dataset). Labellers without a built
artifact are reported as such, not built here.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
from scipy import stats

from rl_bk.experiments import knowledge_pipeline as pipeline
from rl_bk.experiments.artifacts import dataset_fingerprint, family_of, is_built, task_mission
from rl_bk.experiments.labelers import labeler_for
from rl_bk.experiments.task_config import TaskConfig
from rl_bk.knowledge.dataset import read_episodes
from rl_bk.methods.bk.code.potential import CodePotential
from rl_bk.methods.bk.goals.builder import GOALS_FILE, normalize_goal
from rl_bk.methods.bk.preference.training import label_pairs, preference_pairs
from rl_bk.methods.registry import knowledge_task
from studies.plan import load_plan
from studies.trials import plan_tasks

RESULTS = Path(__file__).resolve().parent / "results"
#: episodes of the dataset whose states the two codes' potentials are compared on
CODE_EPISODES = 50


def study_knowledge_task(study: str) -> tuple[TaskConfig, list[str]]:
    """The task whose bk-* knowledge the study used (its first part, with the bk-* methods'
    knowledge settings) and the labellers (``backend`` values) it swept."""
    plan = load_plan(study)
    task = plan_tasks(plan)[plan.parts[0].name]
    grid = task.sweep.get("bk-pref", {})
    params = {k: v[0] for k, v in grid.items() if k != "backend" and len(v) == 1}
    return knowledge_task(task, params), list(grid.get("backend", []))


def code_lines(task: TaskConfig, backends: list[str], reference: str, episodes) -> list[str]:
    folders = {b: pipeline.artifact_dir(task, "bk-code", b) for b in backends}
    lines = ["## BK-Code", ""]
    potentials = {}
    for b, folder in folders.items():
        if not is_built(folder):
            lines += [f"{b}: not built.", ""]
            continue
        code = (folder / "code-final.py").read_text()
        lines += [
            f"{b} (`{folder.name}`), the final code:",
            "",
            "```python",
            code.rstrip(),
            "```",
            "",
        ]
        potential = CodePotential.from_dir(folder)
        try:
            potentials[b] = np.concatenate(potential(episodes))
        finally:
            potential.close()
    if reference in potentials:
        ref = potentials[reference]
        for b, values in potentials.items():
            if b == reference:
                continue
            where = f"over the {len(ref):,} states of the dataset's first {CODE_EPISODES} episodes"
            if np.ptp(values) == 0:
                text = (
                    f"{b}'s potential is the constant {values[0]:g} on every one of the "
                    f"{len(values):,} states of the dataset's first {CODE_EPISODES} episodes: "
                    + ("it shapes nothing" if values[0] == 0 else "no state ranks above another")
                    + " (no rank correlation with the reference's)."
                )
            elif np.ptp(ref) == 0:
                text = f"{reference}'s potential is constant {where}: no rank correlation."
            else:
                rho = stats.spearmanr(values, ref).statistic
                text = (
                    f"Spearman rank correlation of {b}'s potential with {reference}'s {where}: "
                    f"{rho:+.3f} ({b}'s takes {len(np.unique(values))} distinct values)."
                )
            lines.append(text)
        lines.append("")
    return lines


def preference_lines(task: TaskConfig, backends: list[str], reference: str, episodes) -> list[str]:
    p, family = task.knowledge.preference, family_of(task.env)
    folders = {b: pipeline.artifact_dir(task, "bk-pref", b) for b in backends}
    built = [b for b in backends if is_built(folders[b])]
    lines = ["## BK-Pref", ""]
    lines += [line for b in backends if b not in built for line in (f"{b}: not built.", "")]
    if not built:
        return lines
    rng = np.random.default_rng(task.knowledge.dataset.seed)
    _, _, requests = preference_pairs(episodes, p.pairs, p.horizon, family, task_mission(task), rng)
    choices = {}
    for b in built:  # read back from the label store: the build asked these very pairs
        labels = label_pairs(labeler_for(task, b).build(), requests)
        choices[b] = [None if lab is None else lab.choice for lab in labels]
    lines += [
        "| labeller | pairs labelled | A / B / tie | agreement with "
        f"{reference} (decided by both) | held-out accuracy (own labels, best epoch) |",
        "|---|---|---|---|---|",
    ]
    for b in built:
        mine = choices[b]
        counts = {c: sum(x == c for x in mine) for c in ("A", "B", "tie")}
        agreement = "–"
        if reference in choices and b != reference:
            both = [
                (x, y)
                for x, y in zip(mine, choices[reference])
                if x in ("A", "B") and y in ("A", "B")
            ]
            if both:
                same = sum(x == y for x, y in both)
                agreement = f"{same / len(both):.3f} ({same}/{len(both)})"
        report = json.loads((folders[b] / "report.json").read_text())
        accuracy = report.get("heldout_accuracy") or []
        best = report.get("best_epoch")
        held = accuracy[best] if best is not None and best < len(accuracy) else None
        held_text = f"{held:.3f}" if held is not None else "–"
        lines.append(
            f"| {b} | {sum(x is not None for x in mine)} | {counts['A']} / {counts['B']} / "
            f"{counts['tie']} | {agreement} | {held_text} |"
        )
    return [*lines, ""]


def goal_lines(task: TaskConfig, backends: list[str], reference: str) -> list[str]:
    lists = {}
    lines = ["## BK-Goal", ""]
    for b in backends:
        folder = pipeline.artifact_dir(task, "bk-goal", b)
        if not is_built(folder):
            lines += [f"{b}: not built.", ""]
            continue
        lists[b] = json.loads((folder / GOALS_FILE).read_text())["goals"]
    ref = {normalize_goal(g) for g in lists.get(reference, [])}
    for b, goals in lists.items():
        shared = sum(normalize_goal(g) in ref for g in goals)
        also = f"; {shared} of them also in {reference}'s list" if ref and b != reference else ""
        lines += [f"{b}: {len(goals)} goals{also}:", ""]
        lines += [f"- {g}" for g in goals]
        lines.append("")
    return lines


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("study", help="a plan in studies/plans/ whose bk-* methods sweep `backend`")
    p.add_argument(
        "--reference", default="oracle", help="the labeller the others are compared with"
    )
    p.add_argument(
        "--out", type=Path, default=None, help="default studies/results/<study>-knowledge.md"
    )
    args = p.parse_args(argv)
    task, backends = study_knowledge_task(args.study)
    if not backends:
        raise SystemExit(f"{args.study}: its bk-pref sweep names no backend to compare")
    dataset = pipeline.collect_dataset(task)
    episodes = read_episodes(dataset)
    lines = [
        f"# {args.study}: the bk-* knowledge each labeller gave",
        "",
        f"`python -m studies.bk_knowledge {args.study}`. Task `{task.name}` (knowledge "
        f"settings as the study's bk-* trials), dataset `{dataset.name}` (fingerprint "
        f"`{dataset_fingerprint(dataset)}`), labellers {', '.join(backends)}; reference: "
        f"{args.reference}.",
        "",
        *code_lines(task, backends, args.reference, episodes[:CODE_EPISODES]),
        *preference_lines(task, backends, args.reference, episodes),
        *goal_lines(task, backends, args.reference),
    ]
    out = args.out or RESULTS / f"{args.study}-knowledge.md"
    out.write_text("\n".join(lines))
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
