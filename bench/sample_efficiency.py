"""Sample efficiency of the BK methods on BabyAI-Text GoToLocal-RedBall-S20.

    python bench/sample_efficiency.py                        # the committed run (long)
    python bench/sample_efficiency.py --steps 20000 --seeds 0 --backends oracle   # a look
    python bench/sample_efficiency.py --from-runs bench/runs/oracle/... bench/runs/llamacpp/...

One Tune sweep: ppo, rnd and each bk-* method, the bk-* methods once with knowledge labelled
by the oracle backend (rules that read the mission: an upper bound, always labelled oracle)
and once by the embedded SmolLM2-135M (plumbing, not knowledge: its labels are near chance,
bench/results/labeler_quality.md), over the same seeds and env-step budget. Everything the
bk-* methods need (RND dataset, labels, potentials) is built first if missing, as
``tune_run.py`` does.

Writes ``bench/results/sample_efficiency.{md,json,png}``: env steps to 0.9 success per seed,
success at fixed budgets, final extrinsic return, and the success curves. Success is RLlib's
mean over the last 100 training episodes (stochastic policy) at each report.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("RAY_AIR_NEW_OUTPUT", "0")

import pandas as pd

from rl_bk.experiments.results import plot_learning_curves
from rl_bk.experiments.run import RunOptions, run_experiment
from rl_bk.experiments.task_config import load_task

ROOT = Path(__file__).resolve().parents[1]

TASK = "babyai-gotolocal-redball-s20"
METHODS = ["ppo", "rnd", "bk-code", "bk-pref", "bk-goal"]
BK = ("bk-code", "bk-pref", "bk-goal")


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--steps", type=int, default=150_000, help="env steps per trial")
    p.add_argument("--seeds", default="0,1,2")
    p.add_argument("--backends", default="oracle,llamacpp", help="labelers of the bk-* methods")
    p.add_argument("--baselines", default="ppo,rnd", help="methods without knowledge")
    p.add_argument("--budgets", default="50000,100000,150000")
    p.add_argument(
        "--embedded-pairs",
        type=int,
        default=200,
        help="preference pairs the embedded model labels (~2.5 s each on 2 cores)",
    )
    p.add_argument("--embedded-goal-iterations", type=int, default=30)
    p.add_argument("--output-dir", type=Path, default=ROOT / "bench" / "runs")
    p.add_argument("--results", type=Path, default=ROOT / "bench" / "results")
    p.add_argument("--from-runs", type=Path, nargs="+", help="only re-tabulate earlier runs")
    return p.parse_args()


def group_task(args: argparse.Namespace, backend: str):
    """The task for one labeler's group of trials. The embedded model labels fewer pairs and
    goals than the oracle (it takes ~2.5 s a label here); the table says so."""
    task = load_task(TASK)
    k = task.knowledge
    if backend != "oracle":
        k = k.model_copy(
            update={
                "preference": k.preference.model_copy(update={"pairs": args.embedded_pairs}),
                "goals": k.goals.model_copy(update={"iterations": args.embedded_goal_iterations}),
            }
        )
    sweep = {**task.sweep, **{m: {"backend": [backend]} for m in BK}}
    budgets = [int(b) for b in args.budgets.split(",") if b]
    seeds = [int(s) for s in args.seeds.split(",") if s]
    update = {"sweep": sweep, "budgets": budgets, "seeds": seeds, "knowledge": k}
    return task.model_copy(update=update)


def _markdown_table(rows: list[dict]) -> str:
    """The rows as a markdown table, one column per key any row has ("–" where one lacks it)."""
    cols = list(dict.fromkeys(k for row in rows for k in row))
    lines = ["| " + " | ".join(cols) + " |", "|" + "|".join("---" for _ in cols) + "|"]
    lines += ["| " + " | ".join(str(row.get(c, "–")) for c in cols) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def tabulate(run_dirs: list[Path], args: argparse.Namespace) -> dict:
    trials = pd.concat([pd.read_csv(d / "trials.csv") for d in run_dirs], ignore_index=True)
    curves = pd.concat([pd.read_csv(d / "curves.csv") for d in run_dirs], ignore_index=True)
    budgets = [int(b) for b in args.budgets.split(",") if b]
    steps_col = "steps_to_success_0.9"
    rows = []
    for variant, g in trials.groupby("variant", sort=False):
        g = g.sort_values("seed")
        reached = g[steps_col].dropna()
        row = {
            "variant": variant + (" (ORACLE)" if "backend=oracle" in variant else ""),
            "seeds": len(g),
            "steps to 0.9, per seed": ", ".join(
                "never" if math.isnan(v) else f"{v / 1000:.0f}k" for v in g[steps_col]
            ),
            "reached 0.9": f"{len(reached)}/{len(g)}",
        }
        for b in budgets:
            col = f"success_rate_at_{b // 1000}k"
            if col in g:
                row[f"success @{b // 1000}k"] = f"{g[col].mean():.2f} ± {g[col].std():.2f}"
        row["final return"] = f"{g['episode_return_mean'].mean():.2f}"
        row["env steps/s"] = f"{g['env_steps_per_s'].mean():.0f}"
        rows.append(row)
    knowledge = {}
    for d in run_dirs:
        if (d / "knowledge.json").exists():
            knowledge.update(json.loads((d / "knowledge.json").read_text()))
    return {
        "run_dirs": [str(d) for d in run_dirs],
        "table": rows,
        "knowledge": knowledge,
        "markdown": _markdown_table(rows),
        "curves": curves,
    }


def main() -> int:
    args = parse_args()
    started = time.time()
    if args.from_runs:
        run_dirs = list(args.from_runs)
    else:
        run_dirs = []
        for i, backend in enumerate(b for b in args.backends.split(",") if b):
            methods = [*(args.baselines.split(",") if i == 0 and args.baselines else []), *BK]
            options = RunOptions(
                methods=methods, stop_timesteps=args.steps, output_dir=args.output_dir / backend
            )
            run_dirs.append(run_experiment(group_task(args, backend), options))
    out = tabulate(run_dirs, args)
    wall = None if args.from_runs else round(time.time() - started)
    args.results.mkdir(parents=True, exist_ok=True)
    command = "python bench/sample_efficiency.py " + " ".join(sys.argv[1:])
    facts = {
        "command": command.strip(),
        "machine": f"{platform.node()} {os.cpu_count()} CPUs",
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "wall_s": wall,
        **{k: v for k, v in out.items() if k != "curves"},
    }
    (args.results / "sample_efficiency.json").write_text(json.dumps(facts, indent=2, default=str))
    origin = "\n".join(
        f"- {k}: labels from {v.get('labels')} ({'ORACLE' if v.get('is_oracle') else 'LLM'}), "
        f"built in {v.get('seconds')} s, {v.get('path')}"
        for k, v in out["knowledge"].items()
    )
    (args.results / "sample_efficiency.md").write_text(
        f"# Sample efficiency: {TASK}\n\n`{facts['command']}` ({facts['date']}, "
        f"{facts['machine']}, {wall} s).\n\nSuccess = mean over the last 100 training "
        "episodes (stochastic policy), as RLlib reports it after each 2048-step iteration; "
        "'steps to 0.9' = the first report at or above 0.9 once 100 episodes have ended. "
        "`backend=oracle` rows use rule-based labels that read the mission: an upper bound, not "
        "an LLM. `backend=llamacpp` rows use the embedded SmolLM2-135M, whose labels are near "
        f"chance (plumbing, not knowledge); it labelled {args.embedded_pairs} preference pairs "
        f"and {args.embedded_goal_iterations} goal segments where the oracle did the task's "
        "own (2000 and 100).\n\n"
        + out["markdown"]
        + f"\nKnowledge used:\n{origin}\n\n![success curves](sample_efficiency.png)\n"
    )
    plot_learning_curves(
        out["curves"],
        args.results / "sample_efficiency.png",
        f"{TASK}, {len(args.seeds.split(','))} seeds",
    )
    print(out["markdown"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
