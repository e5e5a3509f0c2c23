#!/usr/bin/env python
"""Run a task's experiment through Tune: methods × coefficient grids × seeds.

    python tune_run.py --task babyai-gotolocal-redball-s20 --smoke
    python tune_run.py --task babyai-gotolocal-redball-s20 --methods ppo --num-samples 3
    python tune_run.py --list

The task is ``tune_configs/<task>.yaml`` (env, model, PPO hyper-parameters, stop criterion,
seeds, sweep grid). Results go to ``results/<task>/<timestamp>/``: ``summary.md``/``.csv``,
``trials.csv``, ``learning_curves.png``, and Tune's folder with TensorBoard logs.
On a cluster, run it on the head node (``ray submit cluster.yaml tune_run.py -- ...``) or pass
``--address auto``: Tune then runs as many trials at once as the cluster's CPUs allow.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

# One thread per torch process: with several actors on few cores, more threads only contend.
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("RAY_AIR_NEW_OUTPUT", "0")  # keep Tune's compact table reporter


class _Parser(argparse.ArgumentParser):
    """Errors in one line that says what is valid, not a usage dump."""

    def error(self, message: str) -> None:  # type: ignore[override]
        flags = ", ".join(sorted({s for a in self._actions for s in a.option_strings}))
        self.exit(2, f"tune_run.py: error: {message}. Valid flags: {flags}\n")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    from rl_bk.experiments.task_config import ALGORITHMS
    from rl_bk.labeling.config import BACKENDS

    p = _Parser(description=__doc__.split("\n\n")[0])
    p.add_argument("--task", help="a task name (see --list) or a path to a task YAML")
    p.add_argument("--methods", help="comma-separated methods (default: the task's list)")
    p.add_argument("--num-samples", type=int, help="seeds per method variant (default: the task's)")
    p.add_argument("--stop-timesteps", type=int, help="env steps per trial (default: the task's)")
    p.add_argument("--smoke", action="store_true", help="a tiny run: checks the whole pipeline")
    p.add_argument("--output-dir", type=Path, default=Path("results"), help="default: results/")
    p.add_argument("--address", help="attach to a running Ray cluster, e.g. 'auto'")
    p.add_argument("--wandb", action="store_true", help="also log to Weights & Biases")
    p.add_argument(
        "--backend",
        choices=BACKENDS,
        help="labeler of the bk-* and motif methods' knowledge and of the ellm and oni-* "
        "methods' online labels (default: the task's, oracle)",
    )
    p.add_argument(
        "--algorithm",
        choices=ALGORITHMS,
        help="what the methods train with: ppo (synchronous) or appo (asynchronous: the env "
        "runners sample while the learner updates); default: the task's, ppo",
    )
    p.add_argument(
        "--precollect",
        type=Path,
        metavar="DIR",
        help="rnd trials also save stochastic-policy episodes to this Parquet dataset (BK "
        "stage 1; `rl-bk knowledge collect` does it for a task's BK pipeline)",
    )
    p.add_argument(
        "--knowledge-dir",
        type=Path,
        help="where built knowledge lives (default $RLBK_KNOWLEDGE_DIR or "
        "~/.cache/rl-bk/knowledge)",
    )
    p.add_argument(
        "--resume",
        type=Path,
        metavar="RUN_DIR",
        help="continue an interrupted run from its trials' checkpoints",
    )
    p.add_argument(
        "--storage",
        help="where Tune's results and the knowledge artifacts go on a cluster: a folder every "
        "node mounts, or s3://, gs://, file:// (default: $RLBK_STORAGE, then the task's "
        "`storage:`, else this machine's disk)",
    )
    p.add_argument(
        "--labeler",
        choices=["local", "serve"],
        help="where trials get labels: in their own process (local) or from one Ray Serve "
        "labeler deployment all trials share (serve) (default: the task's `labeler.mode`)",
    )
    p.add_argument(
        "--labeler-app",
        metavar="NAME",
        help="use the Serve labeler app of this name that is already running (implies "
        "--labeler serve; start one with `rl-bk serve --address auto --app-name NAME`)",
    )
    p.add_argument("--list", action="store_true", help="list tasks, methods and environments")
    return p.parse_args(argv)


def _list() -> str:
    import env_registry
    from rl_bk.experiments.task_config import available_tasks, load_task
    from rl_bk.methods.registry import METHODS

    lines = ["tasks (tune_configs/):"]
    for name in available_tasks():
        lines.append(f"  {name:38s} {load_task(name).description}")
    lines.append("methods:")
    lines += [
        f"  {m.name:38s} {m.description}" + (f" [settings: {m.settings}:]" if m.settings else "")
        for m in METHODS.values()
    ]
    lines.append("environments (env_registry):")
    lines += [f"  {s.name:52s} {s.description}" for s in env_registry.ENV_SPECS.values()]
    return "\n".join(lines)


def _with_flags(task, args: argparse.Namespace):
    """The task with what the command line overrides: algorithm, labeler backend, storage,
    labeler app."""
    update: dict = {}
    if args.algorithm:
        update["algorithm"] = args.algorithm
    if args.backend:
        labeler = task.knowledge.labeler.model_copy(update={"backend": args.backend})
        update["knowledge"] = task.knowledge.model_copy(update={"labeler": labeler})
    storage = args.storage or os.environ.get("RLBK_STORAGE")  # cluster.yaml sets it
    if storage:
        update["storage"] = storage
    labeler: dict = {}
    if args.labeler:
        labeler["mode"] = args.labeler
    if args.labeler_app:
        if args.labeler == "local":
            raise ValueError("--labeler-app attaches to a Serve app: drop --labeler local")
        labeler.update(mode="serve", app_name=args.labeler_app, attach=True)
    if labeler:
        update["labeler"] = task.labeler.model_copy(update=labeler)
    return task.model_copy(update=update) if update else task


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    from env_registry.errors import MissingDependencyError, UnknownEnvError
    from rl_bk.experiments.artifacts import KnowledgeMissingError
    from rl_bk.experiments.run import (
        ResourceError,
        RunOptions,
        TrialsFailed,
        resume_experiment,
        run_experiment,
    )
    from rl_bk.experiments.task_config import TaskConfigError, available_tasks, load_task
    from rl_bk.methods.registry import UnknownMethodError, get_method

    if args.list:
        print(_list())
        return 0
    if args.resume:
        # A resumed run keeps its own task, methods, seeds, stop and loggers (Tune restores them).
        fixed = [
            f
            for f, v in (
                ("--task", args.task),
                ("--methods", args.methods),
                ("--num-samples", args.num_samples),
                ("--stop-timesteps", args.stop_timesteps),
                ("--smoke", args.smoke),
                ("--wandb", args.wandb),
                ("--backend", args.backend),
                ("--algorithm", args.algorithm),
                ("--storage", args.storage),
                ("--labeler", args.labeler),
                ("--labeler-app", args.labeler_app),
            )
            if v
        ]
        if fixed:
            print(
                f"tune_run.py: error: --resume continues a run with its own settings; drop "
                f"{', '.join(fixed)}",
                file=sys.stderr,
            )
            return 2
        try:
            options = RunOptions(address=args.address, knowledge_dir=args.knowledge_dir)
            run_dir = resume_experiment(args.resume, options)
        except TrialsFailed as failed:
            return _report(failed.run_dir, failed)
        except (TaskConfigError, ValueError) as err:
            print(f"tune_run.py: error: {err}", file=sys.stderr)
            return 2
        return _report(run_dir)
    if not args.task:
        print(
            f"tune_run.py: error: give --task; available: {', '.join(available_tasks())}",
            file=sys.stderr,
        )
        return 2
    try:
        task = load_task(args.task, smoke=args.smoke)
        task = _with_flags(task, args)
        methods = [m.strip() for m in (args.methods or "").split(",") if m.strip()] or None
        for m in methods or task.methods:
            get_method(m)
        options = RunOptions(
            methods=methods,
            num_samples=args.num_samples,
            stop_timesteps=args.stop_timesteps,
            output_dir=args.output_dir,
            address=args.address,
            wandb=args.wandb,
            smoke=args.smoke,
            precollect=args.precollect,
            knowledge_dir=args.knowledge_dir,
        )
        run_dir = run_experiment(task, options)
    except TrialsFailed as failed:
        return _report(failed.run_dir, failed)
    except (
        TaskConfigError,
        UnknownMethodError,
        UnknownEnvError,
        MissingDependencyError,
        ResourceError,
        KnowledgeMissingError,
        ValueError,
    ) as err:
        print(f"tune_run.py: error: {err}", file=sys.stderr)
        return 2
    return _report(run_dir)


def _report(run_dir, failed=None) -> int:
    """Prints where the results are and the summary table, then the trials that did not
    finish; the exit status: 0 when every trial finished, 1 when one did not
    (docs/running.md)."""
    print(f"\nresults: {run_dir}")
    summary = run_dir / "summary.md"
    if summary.exists():
        print(summary.read_text())
    if failed is None:
        return 0
    print(failed.report(), file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
