"""Sample efficiency of the BK methods on BabyAI-Text GoToLocal-RedBall-S20.

    python bench/sample_efficiency.py                        # the committed run (long)
    python bench/sample_efficiency.py --steps 20000 --seeds 0 --backends oracle   # a look

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

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from rl_bk.experiments.results import _markdown  # noqa: E402
from rl_bk.experiments.run import RunOptions, run_experiment  # noqa: E402
from rl_bk.experiments.task_config import load_task  # noqa: E402

TASK = "babyai-gotolocal-redball-s20"
METHODS = ["ppo", "rnd", "bk-code", "bk-pref", "bk-goal"]
BK = ("bk-code", "bk-pref", "bk-goal")


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--steps", type=int, default=200_000, help="env steps per trial")
    p.add_argument("--seeds", default="0,1,2")
    p.add_argument("--backends", default="oracle,llamacpp", help="labelers of the bk-* methods")
    p.add_argument("--methods", default=",".join(METHODS))
    p.add_argument("--budgets", default="50000,100000,150000,200000")
    p.add_argument("--output-dir", type=Path, default=ROOT / "bench" / "runs")
    p.add_argument("--results", type=Path, default=ROOT / "bench" / "results")
    p.add_argument("--from-run", type=Path, help="only re-tabulate an earlier run folder")
    return p.parse_args()


def sweep_task(args: argparse.Namespace):
    task = load_task(TASK)
    backends = [b for b in args.backends.split(",") if b]
    sweep = {**task.sweep, **{m: {"backend": backends} for m in BK}}
    budgets = [int(b) for b in args.budgets.split(",") if b]
    seeds = [int(s) for s in args.seeds.split(",") if s]
    return task.model_copy(update={"sweep": sweep, "budgets": budgets, "seeds": seeds})


def tabulate(run_dir: Path, args: argparse.Namespace, wall_s: float | None) -> dict:
    trials = pd.read_csv(run_dir / "trials.csv")
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
                "never" if math.isnan(v) else f"{v / 1000:.0f}k" for v in g[steps_col]),
            "reached 0.9": f"{len(reached)}/{len(g)}",
        }  # fmt: skip
        for b in budgets:
            col = f"success_rate_at_{b // 1000}k"
            if col in g:
                row[f"success @{b // 1000}k"] = f"{g[col].mean():.2f} ± {g[col].std():.2f}"
        row["final return"] = f"{g['episode_return_mean'].mean():.2f}"
        rows.append(row)
    table = pd.DataFrame(rows)
    kb = json.loads((run_dir / "knowledge.json").read_text()) if (
        run_dir / "knowledge.json").exists() else {}  # fmt: skip
    return {"run_dir": str(run_dir), "table": rows, "knowledge": kb, "wall_s": wall_s,
            "markdown": _markdown(table)}  # fmt: skip


def main() -> int:
    args = parse_args()
    started = time.time()
    if args.from_run:
        run_dir, wall = args.from_run, None
    else:
        task = sweep_task(args)
        options = RunOptions(methods=args.methods.split(","), stop_timesteps=args.steps,
                             output_dir=args.output_dir)  # fmt: skip
        run_dir = run_experiment(task, options)
        wall = time.time() - started
    out = tabulate(run_dir, args, wall)
    args.results.mkdir(parents=True, exist_ok=True)
    command = "python bench/sample_efficiency.py " + " ".join(sys.argv[1:])
    facts = {"command": command.strip(), "machine": f"{platform.node()} {os.cpu_count()} CPUs",
             "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), **out}  # fmt: skip
    (args.results / "sample_efficiency.json").write_text(json.dumps(facts, indent=2, default=str))
    origin = "\n".join(f"- {k}: labels {v.get('labels')}, built in {v.get('seconds')} s"
                       for k, v in out["knowledge"].items())  # fmt: skip
    (args.results / "sample_efficiency.md").write_text(
        f"# Sample efficiency: {TASK}\n\n`{facts['command']}` ({facts['date']}, "
        f"{facts['machine']}).\n\nSuccess = mean over the last 100 training episodes "
        "(stochastic policy), as RLlib reports it after each iteration; 'steps to 0.9' = "
        "first report at or above 0.9. `backend=oracle` rows use rule-based labels that read "
        "the mission (an upper bound, not an LLM); `backend=llamacpp` rows use the embedded "
        "SmolLM2-135M, whose labels are near chance (plumbing, not knowledge).\n\n"
        + out["markdown"]
        + f"\nKnowledge used:\n{origin}\n\n![curves](sample_efficiency.png)\n"
    )
    png = run_dir / "learning_curves.png"
    if png.exists():
        (args.results / "sample_efficiency.png").write_bytes(png.read_bytes())
    print(out["markdown"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
