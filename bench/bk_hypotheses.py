"""Screening runs, one per hypothesis on why shaped PPO did not beat PPO on GoToLocal-RedBall-S20.

    python -m bench.bk_hypotheses                       # every arm, 3 seeds x 150k env steps
    python -m bench.bk_hypotheses --arms ppo,bk-code-aware --seeds 100,101,102
    nohup python -m bench.bk_hypotheses > bk-hypotheses.log 2>&1 &   # hours: run it detached

Each arm is one Tune run of one method with one setting changed from the task's defaults
(which are BK's: see tune_configs/_babyai_bk.yaml), on seeds the reproduction never uses. The
plan (arms, seeds, budget, metrics) is written to ``bench/results/bk-hypotheses.md`` before
anything runs, and the table is rewritten after every arm, so a stopped screening keeps what
it measured. Re-running the same command continues: finished arms are kept, an interrupted one
resumes from its trials' checkpoints.

Metrics, from BK's greedy evaluation (50 episodes every 20k env steps): env steps to a greedy
success of 0.9 per seed, and the greedy success at each budget (mean over seeds). Oracle
knowledge is labelled as such; "aware" arms had the oracle told the mission (a goal-aware
method, not BK's).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("RAY_AIR_NEW_OUTPUT", "0")

ROOT = Path(__file__).resolve().parents[1]

TASK = "babyai-gotolocal-redball-s20"
RESULTS = ROOT / "bench" / "results" / "bk-hypotheses"
RUNS = ROOT / "bench" / "runs" / "bk-hypotheses"
AWARE = {"include_mission": True}
#: The shaping numerics before BK's were adopted: Ng's convention, Phi / std(Phi).
OLD_NUMERICS = {"shaping_convention": "ng", "potential_normalization": "std"}


@dataclass(frozen=True)
class Arm:
    name: str
    hypothesis: str
    method: str
    params: dict[str, Any] = field(default_factory=dict)  # the method's trial parameters
    knowledge: dict[str, Any] = field(default_factory=dict)  # task.knowledge overrides
    ppo: dict[str, Any] = field(default_factory=dict)  # task.ppo overrides


ARMS = [
    Arm("ppo", "baseline: PPO as BK ran it (clip 0.1, no KL loss, no value clip)", "ppo"),
    Arm(
        "ppo-kl-vfclip",
        "6: RLlib's adaptive KL loss (0.2) and value clip (10) on plain PPO",
        "ppo",
        ppo={"use_kl_loss": True, "kl_coeff": 0.2, "vf_clip_param": 10.0},
    ),
    Arm(
        "bk-code-agnostic",
        "3: BK's setting: task-agnostic oracle code, BK's numerics",
        "bk-code",
        {"backend": "oracle", "include_mission": False},
    ),
    Arm(
        "bk-code-agnostic-no-penalty",
        "5: the task-agnostic potential without its wasted-action penalty (hand-written)",
        "bk-code",
        {"backend": "oracle", "include_mission": False},
        knowledge={"code": {"path": "bench/potentials/objects_in_view_only.py"}},
    ),
    Arm(
        "bk-code-aware",
        "3: the goal-aware oracle's code (1 - d/10 >= 0), BK's numerics",
        "bk-code",
        {"backend": "oracle", **AWARE},
    ),
    Arm(
        "bk-code-aware-ng",
        "1: goal-aware code, Ng's convention (success pays -Phi), BK's scale",
        "bk-code",
        {"backend": "oracle", **AWARE, "shaping_convention": "ng"},
    ),
    Arm(
        "bk-code-aware-ng-std",
        "2: goal-aware code, Ng's convention, Phi / std(Phi) (the old numerics)",
        "bk-code",
        {"backend": "oracle", **AWARE, **OLD_NUMERICS},
    ),
    Arm(
        "bk-code-aware-ng-std-0.1",
        "2: the old numerics with shaping_coeff 0.1",
        "bk-code",
        {"backend": "oracle", **AWARE, **OLD_NUMERICS, "shaping_coeff": 0.1},
    ),
    Arm(
        "bk-code-aware-nonpositive-ng-std-0.3",
        "1: a potential <= 0 that peaks at the goal (hand-written: red-ball distance - 1), "
        "Ng's convention, Phi / std(Phi), shaping_coeff 0.3",
        "bk-code",
        {"backend": "oracle", **AWARE, **OLD_NUMERICS, "shaping_coeff": 0.3},
        knowledge={"code": {"path": "bench/potentials/redball_view_nonpositive.py"}},
    ),
    Arm(
        "bk-code-aware-kl-vfclip",
        "6: goal-aware code, BK's numerics, with RLlib's KL loss and value clip 10",
        "bk-code",
        {"backend": "oracle", **AWARE},
        ppo={"use_kl_loss": True, "kl_coeff": 0.2, "vf_clip_param": 10.0},
    ),
]


def arm_task(arm: Arm, seeds: list[int], steps: int):
    from rl_bk.experiments.task_config import load_task

    task = load_task(TASK)
    knowledge = task.knowledge
    for section, values in arm.knowledge.items():
        knowledge = knowledge.model_copy(
            update={section: getattr(knowledge, section).model_copy(update=values)}
        )
    budgets = sorted({b for b in (50_000, 100_000, 150_000, 200_000) if b < steps} | {steps})
    return task.model_copy(
        update={
            "methods": [arm.method],
            "seeds": seeds,
            "budgets": budgets,
            "sweep": {arm.method: {k: [v] for k, v in arm.params.items()}},
            "ppo": task.ppo.model_copy(update=arm.ppo),
            "knowledge": knowledge,
        }
    )


def run_arm(arm: Arm, seeds: list[int], steps: int, runs_dir: Path = RUNS) -> Path:
    """The arm's finished run folder: runs it, or resumes it, or finds it done."""
    from bench.study import run_or_resume

    return run_or_resume(arm_task(arm, seeds, steps), [arm.method], steps, runs_dir / arm.name)


def arm_rows(run_dir: Path, budgets: list[int]) -> dict[str, Any]:
    """The arm's per-seed numbers (one variant per arm), as JSON-able lists."""
    from bench.study import seed_numbers

    (numbers,) = seed_numbers(run_dir, budgets).values()
    return {
        "seeds": numbers.seeds,
        "eval_steps_to_0.9": numbers.eval_steps,
        "train_steps_to_0.9": numbers.train_steps,
        **{f"eval@{b // 1000}k": numbers.eval_at[b] for b in budgets},
        **{f"train@{b // 1000}k": numbers.train_at[b] for b in budgets},
    }


def write_report(arms: list[Arm], done: dict[str, dict], facts: dict, budgets: list[int]) -> None:
    from bench.study import mean_sd, steps_per_seed, write_arms

    lines = [
        "# BK hypotheses: screening runs on GoToLocal-RedBall-S20",
        "",
        f"`{facts['command']}` (started {facts['date']}, {facts['machine']}). Written by "
        "`bench/bk_hypotheses.py`; the plan below was fixed before the first run.",
        "",
        "## Plan",
        "",
        f"- Task `{TASK}`, its settings (BK's PPO and shaping numerics, greedy evaluation of 50 "
        "episodes every 20k env steps) except the one setting each arm changes.",
        f"- Seeds {facts['seeds']} (the reproduction uses 0-4; these are never used there), "
        f"{facts['steps']:,} env steps per trial.",
        "- Metrics: env steps at which the greedy evaluation first reaches 0.9 success, per seed; "
        "greedy success at " + ", ".join(f"{b // 1000}k" for b in budgets) + " (mean ± std "
        "over seeds); the training success (last 100 episodes, stochastic policy) beside it.",
        "- Knowledge: the rule-based oracle (ORACLE). `aware` arms: the oracle was told the "
        "mission (the goal-aware oracle, a different method from BK's, which withholds it). "
        "Hand-written potentials say so.",
        "",
        "| arm | hypothesis |",
        "|---|---|",
        *[f"| {a.name} | {a.hypothesis} |" for a in arms],
        "",
        "## Results",
        "",
    ]
    cols = [
        "eval steps to 0.9 (per seed)",
        *[f"eval @{b // 1000}k" for b in budgets],
        "train steps to 0.9",
        f"train @{budgets[-1] // 1000}k",
    ]
    lines += ["| arm | " + " | ".join(cols) + " |", "|---|" + "---|" * len(cols)]
    for a in arms:
        if a.name not in done:
            lines.append(f"| {a.name} | not run yet |" + " |" * (len(cols) - 1))
            continue
        r = done[a.name]
        cells = [
            steps_per_seed(r["eval_steps_to_0.9"]),
            *[mean_sd(r[f"eval@{b // 1000}k"]) for b in budgets],
            steps_per_seed(r["train_steps_to_0.9"]),
            mean_sd(r[f"train@{budgets[-1] // 1000}k"]),
        ]
        lines.append(f"| {a.name} | " + " | ".join(cells) + " |")
    lines += ["", "Run folders: `bench/runs/bk-hypotheses/<arm>/` (not committed).", ""]
    write_arms(RESULTS, "\n".join(lines), facts, done)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--arms", default=None, help="comma-separated arm names (default: all)")
    p.add_argument("--seeds", default="100,101,102")
    p.add_argument("--steps", type=int, default=150_000)
    p.add_argument("--list", action="store_true", help="print the arms and exit")
    p.add_argument("--runs", type=Path, default=RUNS, help="where the Tune runs go")
    args = p.parse_args()
    if args.list:
        for a in ARMS:
            print(f"{a.name}: {a.hypothesis}")
        return 0

    from bench.paired_rounds import run_facts
    from bench.study import continued_arms, select_arms

    arms = select_arms(args.arms, ARMS)
    seeds = [int(s) for s in args.seeds.split(",")]
    budgets = sorted(
        {b for b in (50_000, 100_000, 150_000, 200_000) if b < args.steps} | {args.steps}
    )

    facts = {**run_facts("-m bench.bk_hypotheses"), "seeds": seeds, "steps": args.steps}
    facts, done = continued_arms(RESULTS.with_suffix(".json"), facts)
    write_report(arms, done, facts, budgets)
    for arm in arms:
        if arm.name in done:
            continue
        started = time.time()
        run_dir = run_arm(arm, seeds, args.steps, args.runs)
        done[arm.name] = {
            **arm_rows(run_dir, budgets),
            "run_dir": str(run_dir),
            "minutes": round((time.time() - started) / 60, 1),
        }
        write_report(arms, done, facts, budgets)
        print(f"[bk-hypotheses] {arm.name} done in {done[arm.name]['minutes']} min", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
