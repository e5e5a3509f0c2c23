"""Does a refactor keep the results? Smoke runs of tasks at an older commit and at this
checkout, same seeds, compared trial by trial on what training produced.

    python -m bench.same_results --old 46e7e81                       # the default tasks
    python -m bench.same_results --old 46e7e81 --tasks nethack-score
    python -m bench.same_results --old 46e7e81 --new 7b22fe3 --tasks crafter-text
    python -m bench.same_results --compare OLD_RUN NEW_RUN --task T --old C1 --new C2

The older commit runs from a git worktree of its own (removed afterwards), each side with its
own knowledge folder, so nothing built by one side is read by the other. A trial is the same
when its last report's training numbers are equal to the last digit: every RL module's total
loss and entropy, the env steps sampled, and the episodes' return, length and success (NaN
equal to NaN). Greedy-evaluation numbers are left out on purpose: an evaluation changes
nothing in training, and its implementation may differ between the commits. Writes
``bench/results/same_results.md`` (and ``.json``).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TASKS = [
    "babyai-gotolocal-redball-s20",
    "nethack-score",
    "crafter-text-ellm",
    "babyai-gotolocal-redball-s20-ptgm",
]
#: The env runners' numbers compared, besides each module's loss and entropy.
RUNNER_KEYS = (
    "num_env_steps_sampled_lifetime",
    "episode_return_mean",
    "episode_len_mean",
    "success_rate",
)


def trial_numbers(run_dir: Path) -> dict[str, dict[str, float | None]]:
    """Per trial (``variant seed=N``), its last report's training numbers."""
    out = {}
    for trial in sorted((run_dir / "tune").iterdir()):
        if not (trial / "result.json").is_file():
            continue
        rows = [
            json.loads(line)
            for line in (trial / "result.json").read_text().splitlines()
            if line.strip()
        ]
        params = json.loads((trial / "params.json").read_text())
        name = f"{json.dumps(params.get('variant'), sort_keys=True)} seed={params['seed']}"
        last, numbers = rows[-1], {}
        for module, stats in sorted(last.get("learners", {}).items()):
            if isinstance(stats, dict) and "total_loss" in stats:
                numbers[f"{module}/total_loss"] = stats.get("total_loss")
                numbers[f"{module}/entropy"] = stats.get("entropy")
        for key in RUNNER_KEYS:
            numbers[f"env_runners/{key}"] = last.get("env_runners", {}).get(key)
        out[name] = numbers
    return out


def _equal(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return a == b


def compare(old_run: Path, new_run: Path) -> dict:
    old, new = trial_numbers(old_run), trial_numbers(new_run)
    trials = {}
    for name in sorted(set(old) | set(new)):
        a, b = old.get(name), new.get(name)
        if a is None or b is None:
            trials[name] = {"same": False, "why": "only in " + ("new" if a is None else "old")}
            continue
        differ = [k for k in sorted(set(a) | set(b)) if not _equal(a.get(k), b.get(k))]
        trials[name] = {"same": not differ, "differ": {k: [a.get(k), b.get(k)] for k in differ}}
    return {"old_run": str(old_run), "new_run": str(new_run), "trials": trials}


def _smoke(tree: Path, task: str, out: Path, knowledge: Path, log: Path) -> Path:
    env = {**os.environ, "PYTHONPATH": str(tree), "OMP_NUM_THREADS": "1"}
    with open(log, "w") as f:
        command = [
            sys.executable,
            "tune_run.py",
            "--task",
            task,
            "--smoke",
            "--output-dir",
            str(out),
            "--knowledge-dir",
            str(knowledge),
        ]
        subprocess.run(command, cwd=tree, env=env, stdout=f, stderr=subprocess.STDOUT, check=True)
    return sorted((out / task).iterdir())[-1]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--old", help="the older commit to compare this checkout with")
    p.add_argument("--tasks", default=",".join(TASKS), help="comma-separated task names")
    p.add_argument(
        "--compare",
        nargs=2,
        type=Path,
        metavar=("OLD_RUN", "NEW_RUN"),
        help="compare two existing run folders instead (with --task)",
    )
    p.add_argument("--task", help="the task of the two --compare run folders")
    p.add_argument(
        "--new",
        help="the newer commit (default: this checkout); with --compare, "
        "the commit the new run ran at",
    )
    p.add_argument("--out", type=Path, default=ROOT / "bench" / "results")
    args = p.parse_args(argv)
    given = sys.argv[1:] if argv is None else argv
    results: dict[str, dict] = {}
    if args.compare:
        results[args.task or "task"] = compare(*args.compare)
    elif args.old:
        with tempfile.TemporaryDirectory() as tmp:
            tmp = Path(tmp)
            trees = {"old": tmp / "old", "new": tmp / "new" if args.new else ROOT}
            for side, commit in (("old", args.old), ("new", args.new)):
                if commit:
                    subprocess.run(
                        [
                            "git",
                            "-C",
                            str(ROOT),
                            "worktree",
                            "add",
                            "--detach",
                            str(trees[side]),
                            commit,
                        ],
                        check=True,
                        capture_output=True,
                    )
            try:
                for task in args.tasks.split(","):
                    runs = {
                        side: _smoke(
                            tree,
                            task,
                            tmp / f"runs-{side}",
                            tmp / f"kn-{side}",
                            tmp / f"{side}-{task}.log",
                        )
                        for side, tree in trees.items()
                    }
                    results[task] = compare(runs["old"], runs["new"])
                    print(
                        f"{task}: {sum(t['same'] for t in results[task]['trials'].values())}"
                        f"/{len(results[task]['trials'])} trials the same",
                        flush=True,
                    )
            finally:
                for tree in trees.values():
                    if tree != ROOT:
                        subprocess.run(
                            ["git", "-C", str(ROOT), "worktree", "remove", "--force", str(tree)],
                            capture_output=True,
                        )
    else:
        p.error("give --old COMMIT, or --compare OLD_RUN NEW_RUN")

    head = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    meta = {
        "command": " ".join(["python -m bench.same_results", *given]),
        "new": args.new or head,
        "old": args.old,
        "date": time.strftime("%Y-%m-%d %H:%M"),
    }
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / "same_results"
    previous = (
        json.loads(path.with_suffix(".json").read_text())
        if path.with_suffix(".json").is_file()
        else {"tasks": {}}
    )
    tasks = {**previous.get("tasks", {}), **{t: {**r, **meta} for t, r in results.items()}}
    path.with_suffix(".json").write_text(json.dumps({"tasks": tasks}, indent=2, default=str))
    lines = [
        "# Same results before and after a refactor",
        "",
        "Smoke runs (`tune_run.py --task T --smoke`, seed 0) at an older commit and at a "
        "newer one; a trial is the same when its last report's training numbers are "
        "equal to the last digit (every RL module's total loss and entropy, env steps, "
        "episode return, length and success). Written by `bench/same_results.py`; a "
        "`--compare` row compares two run folders made by `tune_run.py --task T --smoke "
        "--knowledge-dir <its own>` at each commit.",
        "",
        "| task | old | new | trials the same | differing | command, date |",
        "|---|---|---|---|---|---|",
    ]
    for task, r in tasks.items():
        same = sum(t["same"] for t in r["trials"].values())
        differ = (
            "; ".join(
                f"{name}: {', '.join(t.get('differ', {})) or t.get('why', '')}"
                for name, t in r["trials"].items()
                if not t["same"]
            )
            or "none"
        )
        lines.append(
            f"| `{task}` | `{r.get('old')}` | `{r.get('new')}` | "
            f"{same}/{len(r['trials'])} | {differ} | `{r['command']}`, {r['date']} |"
        )
    from bench.results_files import write_keeping_reading

    write_keeping_reading(path.with_suffix(".md"), "\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
