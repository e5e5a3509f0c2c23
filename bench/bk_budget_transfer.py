"""BK decided: BK's PPO to the letter at BK's own budget (RedBall-S20, 5M env steps), and
task-agnostic knowledge across six GoToLocal tasks the knowledge never saw (the transfer
suite), ``ppo`` against each ``bk-*`` method, on a measure that can tell. Each machine builds
its own knowledge (a build does not travel and is not reproducible across machines), so the
report names the build each trial used (:func:`knowledge_lines`).

    nohup python -m bench.bk_budget_transfer > bk-budget-transfer.log 2>&1 &   # many hours
    python -m bench.bk_budget_transfer --studies purpleball-s23              # one study
    python -m bench.bk_budget_transfer --report-only                         # tables only

The plan (below, :data:`STUDIES`, :data:`METHODS`, :data:`SEEDS`) is written into
``bench/results/bk-reproduction.md`` before the first trial and never changed after a run is
seen. Every trial is one seed of one method; trials run two at a time (each sampling in its
own process on one CPU: ``bench/results/bk_layout.md``), as one ``tune_run.py`` sweep of the
two. Each finished trial's curves are kept in ``bench/results/bk-budget-transfer.json``, so a
study that spans sessions and machines loses at most the pair it was running (an interrupted
pair resumes from its checkpoints on the same machine). A trial that did not reach its env
steps is an error, never a result.

The primary measure is the mean greedy success over every evaluation up to the budget (the
normalised area under the greedy curve), each ``bk-*`` paired by seed against ``ppo``. The
plan's interval was a 95% percentile bootstrap, which with three seeds is the range of the
differences; the report now prints the Student t interval (:mod:`bench.learning_measures`),
reads the goal under both (:func:`goal_tally`), and reads every area's verdict under the t
interval (:func:`verdict_lines`). A secondary reading, added after the first tasks were
seen, pools each ``bk-*``'s paired differences over the complete transfer tasks with tasks
as the unit (:func:`pooled_lines`). After each pair of the 5M
study, a diagnosis added after its first pair was seen: each trial's last checkpoint plays 200
levels greedy and sampled (``bench/greedy_loops.py``), into
``bench/results/bk-budget-transfer-greedy-loops.{md,json}``, while the checkpoints are still on
the machine; it changes no trial and no measure.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from pathlib import Path

from rl_bk import metrics as M

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("RAY_AIR_NEW_OUTPUT", "0")

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results" / "bk-budget-transfer.json"
REPORT = ROOT / "bench" / "results" / "bk-reproduction.md"
RUNS = ROOT / "bench" / "runs" / "bk-budget-transfer"
HEADING = "## BK's PPO to the letter: BK's budget and the transfer suite (plan 2026-11-26)"

METHODS = ["ppo", "bk-code", "bk-pref", "bk-goal"]
SEEDS = [0, 1, 2]
#: ppo on BK's 10 x env reward (BK's train_rs.py with no potential); task-agnostic knowledge.
SWEEP = {
    "ppo": {"extrinsic_coeff": [10.0]},
    "bk-code": {"include_mission": [False]},
    "bk-pref": {"include_mission": [False]},
    "bk-goal": {"include_mission": [False]},
}
#: (study, task file, env steps, budgets, trials at once): run in this order, the transfer
#: suite first (each of its tasks is decided within a session or two; each of the 5M study's
#: six pairs takes 5 to 8 hours, at the ~270 and ~170 env steps/s a trial measured on the two
#: machines the suite has run on). Every trial runs two at a time, 1 CPU each: 1.89 x the env
#: steps/s of one trial alone on 2 CPUs, 1.37 x one alone with its learner on 2 threads
#: (bench/results/bk_layout.md). A pair cut by a session's end resumes from its checkpoints
#: (every 25 iterations, about 2 minutes) when the command runs again on the same machine.
STUDIES = [
    *[
        (name, f"babyai-gotolocal-{name}", 500_000, [100_000, 200_000, 300_000, 500_000], 2)
        for name in (
            "purpleball-s23",
            "redkey-s23",
            "purplekey-s25",
            "purpleball-s28",
            "redkey-s28",
            "purplekey-s30",
        )
    ],
    (
        "redball-s20-5m",
        "babyai-gotolocal-redball-s20",
        5_000_000,
        [500_000, 1_000_000, 2_000_000, 3_000_000, 5_000_000],
        2,
    ),
]
#: Two trials at once: each samples 8 envs in its own process, its learner on one thread.
PAIR_LAYOUT = {"num_env_runners": 0, "num_envs_per_env_runner": 8}
#: One evaluation interval (1,024-step updates, every 20 of them): the budget edge's slack.
TOLERANCE = 21_000
#: Studies whose trials' last checkpoints are played greedy and sampled once a pair is done
#: (``bench/greedy_loops.py``: why greedy success lags sampled), while they are on the machine.
DIAGNOSED = {"redball-s20-5m"}
DIAGNOSIS_EPISODES = 200
GREEDY_LOOPS = ROOT / "bench" / "results" / "bk-budget-transfer-greedy-loops"


def study_task(task_name: str, steps: int, budgets: list[int], seed: int, at_once: int):
    """The task as the study runs it: its file, narrowed to the study's methods, grid, seed,
    env steps and budgets, in the layout above."""
    from rl_bk.experiments.task_config import load_task

    task = load_task(task_name)
    update = {
        "methods": list(METHODS),
        "seeds": [seed],
        "sweep": {**task.sweep, **SWEEP},
        "stop": task.stop.model_copy(update={"num_env_steps": steps}),
        "budgets": budgets,
    }
    if at_once == 2:
        update["env_runners"] = task.env_runners.model_copy(update=PAIR_LAYOUT)
        update["learner"] = task.learner.model_copy(update={"threads": 1})  # one CPU each
    return task.model_copy(update=update)


def trial_id(study: str, method: str, seed: int) -> str:
    return f"{study}/{method}/{seed}"


def batches() -> list[tuple[str, int, list[str]]]:
    """(study, seed, methods run together) in the order they run: a study's seeds in turn,
    each seed's methods as many at a time as the study runs."""
    return [
        (study, seed, METHODS[i : i + at_once])
        for study, *_, at_once in STUDIES
        for seed in SEEDS
        for i in range(0, len(METHODS), at_once)
    ]


def method_of(label: str) -> str:
    return label.split()[0]


def finished_trials(run_dir: Path, steps: int) -> dict[str, dict]:
    """method -> that trial's curves (``bench.study.trial_curves``); a trial that stopped
    short of ``steps`` env steps (it errored, or was stopped) is refused loudly."""
    from bench.study import trial_curves

    out = {}
    for curve in trial_curves(run_dir, extra=(M.EVAL_SAMPLED_SUCCESS_RATE,)):
        reached = max(
            (s for s in curve["progress"].get(M.ENV_STEPS, []) if s is not None), default=0
        )
        if reached < steps:
            raise SystemExit(
                f"[bk-budget-transfer] {curve['label']} seed {curve['seed']} in "
                f"{run_dir} stopped at {reached:,.0f} of {steps:,} env steps: "
                "see its trial's error.txt; fix it and run the command again"
            )
        out[method_of(curve["label"])] = curve
    return out


def knowledge_used(run_dir: Path) -> dict[str, dict]:
    """method -> the fingerprints of the artifact and dataset its trial used, from the run's
    ``knowledge.json``. A run recorded before fingerprints were has its artifact's computed
    now, from this machine's cache (a built folder is rebuilt in place only by `rl-bk
    knowledge build --force`; its dataset's is not known then); a run from another machine
    has none ({} here)."""
    from rl_bk.experiments.artifacts import artifact_fingerprint, is_built

    path = ROOT / run_dir / "knowledge.json"
    if not path.is_file():
        return {}
    out = {}
    for label, used in json.loads(path.read_text()).items():
        if "fingerprint" not in used and is_built(Path(used["path"])):
            used = {**used, "fingerprint": artifact_fingerprint(Path(used["path"]))}
        if "fingerprint" in used:
            out[method_of(label)] = {
                "fingerprint": used["fingerprint"],
                "dataset_fingerprint": used.get("dataset_fingerprint"),
            }
    return out


def diagnose_greedy_failures(study: str, run_dir: Path) -> dict[str, dict]:
    """trial id -> :func:`bench.greedy_loops.check_run`'s row for each of the run's trials
    (its last checkpoint, :data:`DIAGNOSIS_EPISODES` levels, greedy and sampled)."""
    from bench.greedy_loops import check_run

    out = {}
    for folder in sorted(p for p in (run_dir / "tune").iterdir() if p.is_dir()):
        if any(folder.glob("checkpoint_*")):
            row = check_run(folder, DIAGNOSIS_EPISODES)
            if folder.is_relative_to(ROOT):  # the repository's own path, not this machine's
                row["run"] = str(folder.relative_to(ROOT))
            out[trial_id(study, row["variant"]["method"], row["seed"])] = row
    return out


def record_greedy_failures(runs: list[tuple[str, Path]], stem: Path = GREEDY_LOOPS) -> None:
    """Adds each (study, run folder)'s :func:`diagnose_greedy_failures` to ``stem``.json and
    rewrites ``stem``.md. A check that fails is said loudly and skipped: it is a diagnosis,
    and must not stop a study of many hours (its command is printed to run it by hand)."""
    from bench.greedy_loops import table_lines

    path = stem.with_suffix(".json")
    rows = json.loads(path.read_text()) if path.is_file() else {}
    added = {}
    for study, run_dir in runs:
        try:
            added.update(diagnose_greedy_failures(study, run_dir))
        except Exception as e:  # any failure: see the docstring
            print(
                f"[bk-budget-transfer] WARNING: the greedy-failure check of {run_dir} failed "
                f"({type(e).__name__}: {e}); the study goes on. By hand: python "
                f"bench/greedy_loops.py {run_dir}/tune/* --episodes {DIAGNOSIS_EPISODES} "
                "--name <a new name>",
                flush=True,
            )
    if not added:  # nothing new: the files (and their date) stay as they are
        return
    rows.update(added)
    path.write_text(json.dumps(rows, indent=1))
    when = f", after each pair of {', '.join(sorted(DIAGNOSED))}"
    lines = table_lines([rows[k] for k in sorted(rows)], "python -m bench.bk_budget_transfer", when)
    stem.with_suffix(".md").write_text("\n".join(lines) + "\n")


def undiagnosed_runs(trials: dict[str, dict], stem: Path = GREEDY_LOOPS) -> list[tuple[str, Path]]:
    """(study, run folder) of the finished trials of :data:`DIAGNOSED` studies that have no
    greedy-failure row yet and whose run folders are on this machine."""
    path = stem.with_suffix(".json")
    done = set(json.loads(path.read_text())) if path.is_file() else set()
    runs = {
        (key.split("/")[0], ROOT / trial["run_dir"])
        for key, trial in trials.items()
        if key.split("/")[0] in DIAGNOSED and key not in done and (ROOT / trial["run_dir"]).is_dir()
    }
    return sorted(runs)


# ----------------------------------------------------------------------------- the report
def drop_superseded_reports(trials: dict[str, dict]) -> list[str]:
    """Mends the stored curves of resumed trials kept before the reports a resume supersedes
    were dropped (:func:`rl_bk.experiments.results.without_superseded_reports`): the first
    run's reports after the checkpoint came twice, a curve that jumps back in env steps. A
    trial whose run folder is here is read from it again; one whose folder stayed on an
    earlier machine has the stored curve cut back by env steps (its training success,
    smoothed over 100 episodes, then still mixes the two branches for the ~10 reports after
    the checkpoint; its evaluations are exact). Returns the trials mended, each with how."""
    import pandas as pd

    from bench.study import goes_back
    from rl_bk.experiments.results import without_superseded_reports

    spec = {s[0]: s for s in STUDIES}
    mended = []
    for key, trial in trials.items():
        if not goes_back(trial):
            continue
        study, method, _ = key.split("/")
        run_dir = ROOT / trial["run_dir"]
        if run_dir.is_dir():
            trial.update(finished_trials(run_dir, spec[study][2])[method])
            trial["resumed"] = "curve read again from its run folder"
        else:
            kept = without_superseded_reports(pd.DataFrame(trial["progress"], dtype=float))
            trial["progress"] = {
                c: [None if math.isnan(v) else float(v) for v in kept[c]] for c in kept.columns
            }
            trial["resumed"] = "stored curve cut back by env steps: run folder not here"
        mended.append(f"{key}: {trial['resumed']}")
    return mended


def note_restores(trials: dict[str, dict]) -> list[str]:
    """Adds ``restored_from`` (the env steps of each checkpoint the trial was resumed from,
    :func:`rl_bk.experiments.results.restore_points`) to trials stored before curves kept it,
    read from their run folders where those are on this machine. Returns the trials found
    resumed."""
    spec = {s[0]: s for s in STUDIES}
    read: dict[Path, dict[str, dict]] = {}
    found = []
    for key, trial in trials.items():
        run_dir = ROOT / trial["run_dir"]
        if "restored_from" in trial or not run_dir.is_dir():
            continue
        study, method, _ = key.split("/")
        if run_dir not in read:
            read[run_dir] = finished_trials(run_dir, spec[study][2])
        trial["restored_from"] = read[run_dir][method]["restored_from"]
        if trial["restored_from"]:
            found.append(key)
    return found


#: What the plan's wording got wrong, said under the plan (which itself stays as it was fixed).
CORRECTIONS = [
    "**Corrections to the plan's wording (2026-12-02), from the same data; no run "
    "changed.** (1) With three seeds the percentile bootstrap interval is the range of "
    "the three differences (a resample of the smallest difference three times has "
    "probability 1/27 > 2.5%): it covers the true mean about 75% of the time, not 95%, "
    'and "interval above zero" meant "every seed above", which a method with no effect '
    "passes one time in eight. The tables below print the 95% Student t interval of the "
    "mean difference instead (`bench.learning_measures.t_interval`; its coverage is "
    "tested by simulation in `tests/unit/test_learning_measures.py`), and the goal is "
    "read under both. (2) The knowledge was not one artifact: the cache does not travel "
    "between machines and a build is not reproducible across them, so each machine built "
    "its own. Each study's tables end with the fingerprint of the build each trial used: "
    "bk-pref and bk-goal used at least three different builds each over the transfer tasks "
    "and the 5M study (the first trials of PurpleBall-S23 did not record theirs), and the 5M "
    "study's are its own, so its verdict and the transfer suite's are about different "
    "builds; bk-code's oracle code is the same text on every machine (its fingerprints "
    "differ by build log and build time).",
]


def plan_lines(facts: dict) -> list[str]:
    lines = [
        HEADING,
        "",
        f"`{facts['command']}` (started {facts['date']}, {facts['machine']}). Written by "
        "`bench/bk_budget_transfer.py`; the plan below was fixed before the first run and is "
        "not changed after a run is seen.",
        "",
        "- **Settings**: BK's PPO to the letter, as its `train_rs.py` ran, the task files' "
        "defaults (`tune_configs/_babyai_bk.yaml`): BK's conv network (one torso), CleanRL's "
        "clipped value loss (±0.1), advantages normalised per minibatch, Adam ε 1e-5, no "
        "gradient-norm clip (BK's 0.5 never acts), 1,024 env steps per update in 4 "
        "minibatches × 4 epochs (16 minibatches, every epoch's at random: the first "
        "included, as CleanRL's), a time limit ending the episode in GAE, `ppo` on BK's 10 × "
        "env reward. Layout (`bench/results/bk_layout.md`): every trial two at a time, each "
        "sampling 8 envs in its own process, its learner on one thread (1.89 × one trial's "
        "env steps/s); a pair cut by a session's end resumes from its checkpoints. Order: "
        "the transfer suite's tasks, then the 5M study.",
        "- **Knowledge**: the task-agnostic rule-based oracle (ORACLE), never an LLM and never "
        "told the mission; one artifact, built once on GoToLocal-Pretraining-S20, reused "
        "unchanged on every task. The dataset and BK-Goal's settings are the task file's "
        "(departures from BK, with their reasons, are in its `knowledge:` section).",
        f"- **Methods and seeds**: {', '.join(METHODS)}; seeds {SEEDS} on every study; none "
        "dropped or swapped after being seen.",
        "- **Primary measure**: the mean greedy success (50 episodes, every ~20k env steps) "
        "over every evaluation up to the budget: the normalised area under the greedy curve. "
        "Each bk-* paired by seed with ppo: the per-seed differences, their mean and a 95% "
        "percentile bootstrap interval (coarse with 3 seeds: about their range).",
        "- **Secondary**: the same area for the sampled policy's evaluation (the same 50 "
        "episodes' seeds) and for training success (last 100 episodes); greedy success at "
        "each budget; env steps to 0.9 greedy success.",
        "- **Goal**: each bk-* above ppo on the primary measure with the paired 95% interval "
        "above zero, on RedBall-S20 at 5M and on at least half of the transfer tasks "
        "(PurpleBall-S23, RedKey-S23, PurpleKey-S25, PurpleBall-S28, RedKey-S28, "
        "PurpleKey-S30: neither the target nor the room size was in the knowledge's data).",
        "",
        "| study | task | env steps per trial | budgets |",
        "|---|---|---|---|",
    ]
    for study, task_name, steps, budgets, _ in STUDIES:
        lines.append(
            f"| {study} | `{task_name}` | {steps:,} | "
            f"{', '.join(f'{b // 1000:,}k' for b in budgets)} |"
        )
    return [*lines, "", *CORRECTIONS, ""]


def _points(curve: dict, key: str) -> list[tuple[float, float]]:
    from bench.learning_measures import curve_points

    p = curve["progress"]
    return curve_points(p[M.ENV_STEPS], p[key]) if key in p else []


#: The areas the report reads, under its names: greedy and sampled evaluation, training.
MEASURES = {
    "greedy area": M.EVAL_SUCCESS_RATE,
    "sampled area": M.EVAL_SAMPLED_SUCCESS_RATE,
    "training area": M.SUCCESS_RATE,
}


def study_areas(study: str, steps: int, trials: dict[str, dict]) -> dict[str, dict]:
    """method -> measure name -> seed -> that trial's normalised area to ``steps``, for the
    methods with at least one finished trial in ``study`` (in :data:`METHODS` order)."""
    from bench.learning_measures import normalised_area

    stats: dict[str, dict[str, dict[int, float]]] = {}
    for method in METHODS:
        mine = {
            s: trials[trial_id(study, method, s)]
            for s in SEEDS
            if trial_id(study, method, s) in trials
        }
        if mine:
            stats[method] = {
                name: {
                    s: normalised_area(_points(c, key), steps, tolerance=TOLERANCE).value
                    for s, c in mine.items()
                }
                for name, key in MEASURES.items()
            }
    return stats


def study_lines(study: str, steps: int, budgets: list[int], trials: dict[str, dict]) -> list[str]:
    """One study's table (mean ± std over seeds) and each bk-* paired with ppo."""
    import pandas as pd

    from bench.learning_measures import interval_text, paired_difference, signed, value_at_budget
    from bench.study import mean_sd
    from rl_bk.experiments.results import steps_to_reach

    stats = study_areas(study, steps, trials)
    measures = list(MEASURES)
    rows = []
    for method in stats:
        mine = {s: trials[trial_id(study, method, s)] for s in stats[method]["greedy area"]}
        cells = [mean_sd(list(stats[method][name].values())) for name in measures]
        for b in budgets:
            cells.append(
                mean_sd(
                    [
                        value_at_budget(_points(c, M.EVAL_SUCCESS_RATE), b, tolerance=TOLERANCE)
                        for c in mine.values()
                    ]
                )
            )
        reach = [
            steps_to_reach(
                pd.DataFrame(c["progress"], dtype=float), M.EVAL_SUCCESS_RATE, 0.9, min_episodes=0
            )
            for c in mine.values()
        ]
        cells.append(", ".join("never" if math.isnan(r) else f"{r / 1000:,.0f}k" for r in reach))
        rows.append(
            f"| {mine[next(iter(mine))]['label']} | {len(mine)} | " + " | ".join(cells) + " |"
        )
    if not rows:
        return [f"### {study}", "", "Not run yet.", ""]
    cols = [*measures, *[f"greedy @{b // 1000:,}k" for b in budgets], "greedy steps to 0.9"]
    lines = [
        f"### {study} ({steps:,} env steps)",
        "",
        "| variant | seeds | " + " | ".join(cols) + " |",
        "|---|---|" + "---|" * len(cols),
        *rows,
        "",
    ]
    if "ppo" in stats and len(stats) > 1:
        lines += [
            "Paired by seed, bk-* minus ppo (95% t interval of the mean difference):",
            "",
            "| method | measure | per-seed differences | mean | 95% t interval |",
            "|---|---|---|---|---|",
        ]
        for method in METHODS[1:]:
            if method not in stats:
                continue
            for name in measures:
                d = paired_difference(stats[method][name], stats["ppo"][name])
                lines.append(
                    f"| {method} | {name} | {', '.join(signed(x) for x in d.diffs)} "
                    f"| {signed(d.mean)} | {interval_text(d)} |"
                )
        lines.append("")
    return lines


#: The goal's two parts: BK's own budget ...
BUDGET_STUDY = "redball-s20-5m"
#: ... and the transfer tasks (each bk-* above ppo on at least half of them).
TRANSFER = [s[0] for s in STUDIES if s[0] != BUDGET_STUDY]


def complete_differences(trials: dict[str, dict], measure: str) -> dict[str, dict]:
    """method -> study -> the paired difference (bk-* minus ppo) of ``measure`` (a name in
    :data:`MEASURES`), for each study where all seeds of the method and of ppo are in."""
    from bench.learning_measures import paired_difference

    areas = {
        study: {m: v[measure] for m, v in study_areas(study, steps, trials).items()}
        for study, _, steps, *_ in STUDIES
    }
    out: dict[str, dict] = {}
    for method in METHODS[1:]:
        out[method] = {}
        for study in [*TRANSFER, BUDGET_STUDY]:
            mine, ppo = areas[study].get(method, {}), areas[study].get("ppo", {})
            if len(mine) == len(SEEDS) and len(ppo) == len(SEEDS):
                out[method][study] = paired_difference(mine, ppo)
    return out


def best_case_lower_end(study: str, method: str, trials: dict[str, dict]) -> float | None:
    """The highest lower end ``method``'s paired greedy-area t interval on an incomplete
    ``study`` can reach, whatever the seeds still to run bring (each difference between −1
    and 1, areas lying in [0, 1]). The t interval's lower end is not monotone in one
    difference (a large one widens the spread), so the ends are searched on a grid. None when
    no seed of both is in yet, or when the study is complete."""
    import itertools

    from bench.learning_measures import t_interval

    steps = {s[0]: s[2] for s in STUDIES}[study]
    areas = study_areas(study, steps, trials)
    mine = areas.get(method, {}).get("greedy area", {})
    ppo = areas.get("ppo", {}).get("greedy area", {})
    shared = set(mine) & set(ppo)
    if not shared or len(shared) == len(SEEDS):
        return None
    known = [mine[s] - ppo[s] for s in sorted(shared)]
    grid = [i / 50 - 1 for i in range(101)]
    return max(
        t_interval([*known, *rest])[0]
        for rest in itertools.product(grid, repeat=len(SEEDS) - len(shared))
    )


def goal_tally(trials: dict[str, dict]) -> dict[str, dict]:
    """Where each bk-* stands against the plan's goal: above ppo on the primary measure with the
    paired 95% interval above zero, on the 5M study and on at least half of the transfer
    tasks, read under the t interval the tables print (``verdict``) and under the plan's
    percentile interval, which with three seeds is above zero when every seed is
    (``plan_verdict``). A study counts once all its seeds of the method and of ppo are in,
    or, for the 5M study, once the seeds in keep it below whatever the rest bring
    (:func:`best_case_lower_end`; ``budget_best_case`` holds that lower end). A verdict is
    "met", "not met" (it can no longer be met) or "open"."""
    need = math.ceil(len(TRANSFER) / 2)

    def verdict(above: dict[str, bool], budget: bool | None) -> str:
        decided = [t for t in TRANSFER if t in above]
        wins = sum(above[t] for t in decided)
        if wins >= need and budget:
            return "met"
        if wins + len(TRANSFER) - len(decided) < need or budget is False:
            return "not met"
        return "open"

    out = {}
    for method, per_study in complete_differences(trials, "greedy area").items():
        above = {study: d.ci is not None and d.ci[0] > 0 for study, d in per_study.items()}
        every = {study: bool(d.diffs) and min(d.diffs) > 0 for study, d in per_study.items()}
        means = {study: d.mean for study, d in per_study.items()}
        decided = [t for t in TRANSFER if t in above]
        budget = above.get(BUDGET_STUDY)
        best_case = (
            None if budget is not None else best_case_lower_end(BUDGET_STUDY, method, trials)
        )
        if best_case is not None and best_case <= 0:
            budget = False
        out[method] = {
            "decided": decided,
            "above": [t for t in decided if above[t]],
            "every_seed_above": [t for t in decided if every[t]],
            "mean_above_zero": [t for t in decided if means[t] > 0],
            "budget": budget,
            "budget_every_seed": every.get(BUDGET_STUDY),
            "verdict": verdict(above, budget),
            "plan_verdict": verdict(every, every.get(BUDGET_STUDY)),
            "budget_best_case": best_case if budget is False else None,
        }
    return out


def goal_lines(trials: dict[str, dict]) -> list[str]:
    """The goal's tally as a table, written under the plan so that it reads at a glance."""
    from bench.learning_measures import signed

    tally = goal_tally(trials)
    need = math.ceil(len(TRANSFER) / 2)
    lines = [
        "### The goal so far",
        "",
        f"Each bk-* must be above ppo (greedy area, paired 95% interval above zero) on "
        f"{BUDGET_STUDY} and on at least {need} of the {len(TRANSFER)} transfer tasks; a "
        f"study counts once all its seeds are in, and {BUDGET_STUDY} also once the seeds "
        "in keep the interval's lower end at or below zero even if every seed still to "
        "run came out as well as it could. Read under the 95% t interval the tables print, "
        "and under the plan's percentile interval (with three seeds: every seed above "
        "ppo, a test a method with no effect passes one time in eight). Written by the "
        "script from the tables below.",
        "",
        "| method | transfer tasks complete | above ppo (t interval > 0) | every seed above "
        f"(the plan's interval > 0) | mean above ppo | {BUDGET_STUDY} above ppo (t; every "
        "seed) | goal (t interval) | goal (the plan's interval) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for method, t in tally.items():
        budget = {None: "not complete", True: "yes", False: "no"}[t["budget"]]
        if t["budget_best_case"] is not None:
            budget = (
                f"no, before all seeds are in (lower end at best {signed(t['budget_best_case'])})"
            )
        every = {None: "not complete", True: "yes", False: "no"}[t["budget_every_seed"]]
        lines.append(
            f"| {method} | {len(t['decided'])} of {len(TRANSFER)} | "
            f"{len(t['above'])} ({', '.join(t['above']) or 'none'}) | "
            f"{len(t['every_seed_above'])} "
            f"({', '.join(t['every_seed_above']) or 'none'}) | "
            f"{len(t['mean_above_zero'])} ({', '.join(t['mean_above_zero']) or 'none'})"
            f" | {budget}; {every} | {t['verdict']} | {t['plan_verdict']} |"
        )
    return [*lines, ""]


#: Below this mean area, ppo's own measure is at its floor on a study: a difference there says
#: that ppo's policy rarely succeeds, not how much a bk-* adds.
FLOOR = 0.10
#: Above this one, at its ceiling: every method nearly always succeeds, and a difference is
#: about the last few failures, not about learning faster.
CEILING = 0.90


def verdict_lines(trials: dict[str, dict]) -> list[str]:
    """Each bk-* against ppo on every study and on each of the three areas, under the t
    interval: above (the interval above zero), below (under zero) or neither; and where
    ppo's mean area is at its floor (:data:`FLOOR`) or ceiling (:data:`CEILING`), so that
    no verdict rests on it."""
    from bench.learning_measures import signed

    studies = [*TRANSFER, BUDGET_STUDY]
    by_measure = {name: complete_differences(trials, name) for name in MEASURES}
    floors = {}
    for study, _, steps, *_ in STUDIES:
        ppo = study_areas(study, steps, trials).get("ppo", {})
        for name in MEASURES:
            values = [v for v in ppo.get(name, {}).values() if not math.isnan(v)]
            mean = sum(values) / len(values) if values else math.nan
            floors[study, name] = " †" if mean < FLOOR else " ‡" if mean > CEILING else ""
    lines = [
        "### Every area's verdict under the t interval",
        "",
        "Each bk-* minus ppo, paired by seed, on each area the study recorded: **above** "
        "where the 95% t interval lies above zero, **below** where it lies under zero, "
        "otherwise the mean alone (neither). † marks a study where ppo's own mean area on "
        f"that measure is under {FLOOR:.2f}: ppo is at the floor there (its greedy policy "
        "rarely succeeds), so a difference says little about how much a bk-* adds, and "
        f"no verdict rests on it; ‡ marks one where ppo's mean area is over {CEILING:.2f}: "
        "at the ceiling, where a difference is about the last few failures. Written by "
        "the script from the tables below.",
        "",
        "| method | area | " + " | ".join(studies) + " |",
        "|---|---|" + "---|" * len(studies),
    ]
    for method in METHODS[1:]:
        for name, differences in by_measure.items():
            cells = []
            for study in studies:
                d = differences[method].get(study)
                if d is None:
                    cells.append("–")
                    continue
                word = (
                    "**above**"
                    if d.ci and d.ci[0] > 0
                    else "**below**"
                    if d.ci and d.ci[1] < 0
                    else ""
                )
                cells.append(" ".join(x for x in (word, signed(d.mean)) if x) + floors[study, name])
            lines.append(f"| {method} | {name} | " + " | ".join(cells) + " |")
    return [*lines, ""]


#: When the pooled reading below was added, and what had been seen by then (it is not in the
#: plan, so it is read as a secondary measure and the goal above does not change).
POOLED_ADDED = "added 2026-11-27, after PurpleBall-S23 and RedKey-S23's seeds 0 and 1 had been seen"


def pooled_lines(trials: dict[str, dict]) -> list[str]:
    """Each bk-* against ppo over every complete transfer task at once: the mean over tasks of
    the paired difference, with tasks as the unit (the t interval over the tasks' mean
    differences, :func:`bench.learning_measures.pooled_difference`)."""
    from bench.learning_measures import interval_text, pooled_difference, signed

    lines = [
        "### Across the transfer tasks (secondary)",
        "",
        f"Not in the plan ({POOLED_ADDED}); the goal above is unchanged. For each bk-*, "
        "the paired difference from ppo on every complete transfer task, pooled: the mean "
        "over tasks of each task's mean difference, and the 95% t interval over the "
        "tasks' mean differences (tasks as the unit: it carries how the effect differs "
        "from task to task as well as the seeds' spread). Until 2026-12-02 this table "
        "printed a percentile bootstrap that resampled seeds within fixed tasks, with the "
        "uncorrected variance: too narrow for a claim about the method.",
        "",
        "| method | measure | tasks | tasks above ppo | seeds above ppo | mean "
        "| 95% t interval (tasks) |",
        "|---|---|---|---|---|---|---|",
    ]
    by_measure = {name: complete_differences(trials, name) for name in MEASURES}
    rows = []
    for method in METHODS[1:]:
        for name, differences in by_measure.items():
            per_study = differences[method]
            pooled = pooled_difference({t: d for t, d in per_study.items() if t in TRANSFER})
            if pooled.tasks:
                above = sum(x > 0 for x in pooled.diffs)
                tasks_above = sum(x > 0 for x in pooled.task_means)
                rows.append(
                    f"| {method} | {name} | {len(pooled.tasks)} | {tasks_above} | "
                    f"{above} of "
                    f"{len(pooled.diffs)} | {signed(pooled.mean)} | "
                    f"{interval_text(pooled)} |"
                )
    if not rows:
        return []
    return [*lines, *rows, ""]


#: When the reading of what the goal can detect was added (not in the plan either).
DETECTION_ADDED = "added 2026-11-27, after PurpleBall-S23 and RedKey-S23 were complete"
#: True effects on the greedy area that the detection table is read at.
EFFECTS = [0.0, 0.025, 0.05, 0.10, 0.15]


def detection_lines(trials: dict[str, dict]) -> list[str]:
    """What the goal's transfer criterion can detect: for a true effect on the greedy area,
    the chance that one task passes (its three paired differences all above zero) and that at
    least half of the transfer tasks do, with the seed-to-seed spread of the paired
    differences measured on the complete tasks. So that "not above" can be read: it is
    evidence against an effect only where an effect of that size would usually pass."""
    from bench.learning_measures import (
        chance_at_least,
        chance_every_seed_above,
        chance_interval_above,
        sd_interval,
        signed,
        within_task_sd,
    )

    per_method = complete_differences(trials, "greedy area")
    groups = [
        d.diffs
        for per_study in per_method.values()
        for study, d in per_study.items()
        if study in TRANSFER
    ]
    sd, dof = within_task_sd(groups)
    if not dof:
        return []
    done = {study for per_study in per_method.values() for study in per_study}
    ppo = [
        v
        for study, _, steps, *_ in STUDIES
        if study in done and study in TRANSFER
        for v in study_areas(study, steps, trials)["ppo"]["greedy area"].values()
    ]
    low, high = sd_interval(sd, dof)
    need = math.ceil(len(TRANSFER) / 2)
    lines = [
        "### What the goal can detect (secondary)",
        "",
        f"Not in the plan ({DETECTION_ADDED}). If a bk-* raised the greedy area by the same "
        f"amount on every transfer task, how often would the goal's test pass? A task "
        "passes when its 95% t interval lies above zero; under the plan's percentile "
        f"interval it passed when all {len(SEEDS)} paired differences were above zero "
        "(shown for comparison: that test passes one time in eight with no effect). Each "
        "difference is taken as "
        "normal around the true effect with the seed-to-seed spread measured on the "
        f"complete tasks: the pooled within-task standard deviation of the paired "
        f"differences, {sd:.3f} ({dof} degrees of freedom, {len(groups)} method-task "
        f"groups; 95% interval [{low:.3f}, {high:.3f}], so the chances below are rough); "
        "tasks independent, and the same spread on each. ppo's greedy area on those "
        f"tasks: {sum(ppo) / len(ppo):.3f} on average ({len(ppo)} runs). The goal also "
        f"needs {BUDGET_STUDY}: one more task's test (the middle column, if its spread is "
        "the same).",
        "",
        f"| true effect on the greedy area | one task passes (t) | at least {need} of "
        f"{len(TRANSFER)} tasks pass (t) | one task passes (every seed above) | at least "
        f"{need} of {len(TRANSFER)} pass (every seed above) |",
        "|---|---|---|---|---|",
    ]
    for effect in EFFECTS:
        one = chance_interval_above(effect, sd, len(SEEDS))
        every = chance_every_seed_above(effect, sd, len(SEEDS))
        lines.append(
            f"| {signed(effect) if effect else '0 (no effect)'} | {one:.2f} | "
            f"{chance_at_least(need, len(TRANSFER), one):.2f} | {every:.2f} | "
            f"{chance_at_least(need, len(TRANSFER), every):.2f} |"
        )
    return [*lines, ""]


def knowledge_lines(study: str, trials: dict[str, dict]) -> list[str]:
    """Which build of the knowledge each bk-* trial used: the cache does not travel between
    machines, so a study that spans machines may use more than one build of the artifact."""
    seen: dict[tuple[str, str | None], list[str]] = {}
    for method in METHODS[1:]:
        for s in SEEDS:
            trial = trials.get(trial_id(study, method, s))
            if trial is not None:
                fp = (trial.get("knowledge") or {}).get("fingerprint")
                seen.setdefault((method, fp), []).append(str(s))
    if not seen:
        return []
    parts = [
        f"{method} {f'`{fp}`' if fp else 'not recorded (an earlier machine)'} "
        f"(seed{'s' if len(s) > 1 else ''} {', '.join(s)})"
        for (method, fp), s in seen.items()
    ]
    return [
        "Knowledge each bk-* trial used (artifact fingerprint, "
        "`rl_bk.experiments.artifacts.artifact_fingerprint`): " + "; ".join(parts) + ".",
        "",
    ]


def resumed_lines(study: str, trials: dict[str, dict]) -> list[str]:
    """The trials of ``study`` resumed from a checkpoint: from which env steps (where the run
    folder said), and how a curve stored before the superseded reports were dropped was
    mended (:func:`drop_superseded_reports`)."""
    resumed = []
    for m in METHODS:
        for s in SEEDS:
            trial = trials.get(trial_id(study, m, s), {})
            how = []
            if trial.get("restored_from"):
                how.append(
                    f"from {', '.join(f'{x:,.0f}' for x in trial['restored_from'])} env steps"
                )
            if "resumed" in trial:
                how.append(trial["resumed"])
            if how:
                resumed.append(f"{m} seed {s} ({'; '.join(how)})")
    if not resumed:
        return []
    return [
        "Resumed from a checkpoint after a stop, each curve kept without the reports the "
        "resume superseded: " + "; ".join(resumed) + ".",
        "",
    ]


def section(facts: dict, trials: dict[str, dict]) -> list[str]:
    """The plan and every study's tables, as ``bk-reproduction.md`` holds them."""
    from bench.study import plot_study

    lines = [
        *plan_lines(facts),
        *goal_lines(trials),
        *verdict_lines(trials),
        *pooled_lines(trials),
        *detection_lines(trials),
    ]
    for study, _, steps, budgets, _ in STUDIES:
        lines += study_lines(study, steps, budgets, trials)
        curves = [c for t, c in trials.items() if t.startswith(f"{study}/")]
        plot = REPORT.parent / f"bk-budget-transfer-{study}.png"
        if curves and plot_study(
            curves,
            {
                "greedy success (evaluation)": M.EVAL_SUCCESS_RATE,
                "training success (last 100 episodes)": M.SUCCESS_RATE,
            },
            plot,
            f"BK's PPO, {study} (ORACLE knowledge)",
        ):
            lines += [f"Curves: `{plot.name}`.", ""]
        lines += knowledge_lines(study, trials)
        lines += resumed_lines(study, trials)
        left = [f"{m}/{s}" for m in METHODS for s in SEEDS if trial_id(study, m, s) not in trials]
        if curves and left:
            lines += [f"Still to run: {', '.join(left)}.", ""]
    return lines


def saved_section() -> list[str]:
    """This study's section as its results JSON says (nothing before the plan was written):
    ``bench/bk_reproduction.py`` keeps it when it rewrites the report."""
    return section(*load()) if RESULTS.is_file() else []


def load() -> tuple[dict, dict[str, dict]]:
    if RESULTS.is_file():
        old = json.loads(RESULTS.read_text())
        return {k: old[k] for k in ("command", "machine", "date")}, old.get("trials", {})
    from bench.paired_rounds import run_facts

    # The command that runs the plan, whatever flags wrote it first (--report-only included).
    return {
        **run_facts("-m bench.bk_budget_transfer"),
        "command": "python -m bench.bk_budget_transfer",
    }, {}


def save(facts: dict, trials: dict[str, dict]) -> None:
    from bench.study import replace_section

    RESULTS.write_text(json.dumps({**facts, "trials": trials}, indent=1))
    replace_section(REPORT, HEADING, section(facts, trials))


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--studies", default=None, help="comma-separated (default: all, in order)")
    p.add_argument("--report-only", action="store_true", help="rewrite the tables and stop")
    args = p.parse_args()
    names = args.studies.split(",") if args.studies else [s[0] for s in STUDIES]
    if set(names) - {s[0] for s in STUDIES}:
        raise SystemExit(f"unknown studies; valid: {', '.join(s[0] for s in STUDIES)}")

    from bench.study import code_commit, run_or_resume

    facts, trials = load()
    for key, trial in trials.items():  # fingerprints for trials from before they were kept
        method = key.split("/")[1]
        if "knowledge" not in trial and method != "ppo":
            found = knowledge_used(Path(trial["run_dir"])).get(method)
            if found:
                trial["knowledge"] = found
    for line in drop_superseded_reports(trials):
        print(f"[bk-budget-transfer] resumed trial mended: {line}", flush=True)
    for key in note_restores(trials):
        print(f"[bk-budget-transfer] resumed trial noted: {key}", flush=True)
    save(facts, trials)
    if args.report_only:
        return 0
    # Finished pairs still on this machine that ended before the check existed, or whose
    # check failed last time.
    record_greedy_failures(undiagnosed_runs(trials))
    spec = {s[0]: s for s in STUDIES}
    for study, seed, methods in batches():
        todo = [m for m in methods if trial_id(study, m, seed) not in trials]
        if study not in names or not todo:
            continue
        _, task_name, steps, budgets, at_once = spec[study]
        task = study_task(task_name, steps, budgets, seed, at_once)
        home = RUNS / study / f"{seed}-{'+'.join(todo)}"
        run_dir = run_or_resume(task, todo, steps, home)
        used = knowledge_used(run_dir.relative_to(ROOT))
        for method, curve in finished_trials(run_dir, steps).items():
            trials[trial_id(study, method, seed)] = {
                **curve,
                "commit": code_commit(),
                "run_dir": str(run_dir.relative_to(ROOT)),
                "knowledge": used.get(method),
            }
        save(facts, trials)
        print(f"[bk-budget-transfer] {study} seed {seed} {'+'.join(todo)} done", flush=True)
        if study in DIAGNOSED:
            record_greedy_failures([(study, run_dir)])
    return 0


if __name__ == "__main__":
    sys.exit(main())
