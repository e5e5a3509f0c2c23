"""What BK's knowledge was, beside a study's curves: each labeller's bk-* artifacts for one
task, read back and compared with a reference labeller's (the oracle's) on the same data
(``rl-bk knowledge compare``, with the study's task and labellers).

    python -m studies.bk_knowledge qwen-bk     # -> studies/results/qwen-bk-knowledge.md

The task is the plan's first part with the bk-* methods' knowledge settings (one artifact per
labeller serves every part: the knowledge is built on one dataset). Labellers without a built
artifact are reported as such, not built here.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from rl_bk.experiments.knowledge_pipeline import compare_knowledge
from rl_bk.experiments.task_config import TaskConfig
from rl_bk.methods.registry import BK_KINDS, knowledge_task
from studies.plan import load_plan
from studies.trials import plan_tasks

RESULTS = Path(__file__).resolve().parent / "results"


def study_knowledge_task(study: str) -> tuple[TaskConfig, list[str]]:
    """The task whose bk-* knowledge the study used (its first part, with the bk-* methods'
    knowledge settings) and the labellers (``backend`` values) it swept."""
    plan = load_plan(study)
    task = plan_tasks(plan)[plan.parts[0].name]
    grid = task.sweep.get("bk-pref", {})
    params = {k: v[0] for k, v in grid.items() if k != "backend" and len(v) == 1}
    return knowledge_task(task, params), list(grid.get("backend", []))


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
    lines = [
        f"# {args.study}: the bk-* knowledge each labeller gave",
        "",
        f"`python -m studies.bk_knowledge {args.study}` (knowledge settings as the study's bk-* "
        "trials).",
        "",
        *compare_knowledge(task, list(BK_KINDS), backends, args.reference),
    ]
    out = args.out or RESULTS / f"{args.study}-knowledge.md"
    out.write_text("\n".join(lines))
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
