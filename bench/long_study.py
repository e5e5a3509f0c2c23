"""Studies too long for one session: a task's methods, one method and one seed at a time,
each finished part's numbers and curves kept in the results JSON, so a study that spans
sessions and machines loses at most the seed it was running.

    nohup python -m bench.long_study ptgm-fair > ptgm-fair.log 2>&1 &      # hours
    python -m bench.long_study nethack-oni --methods oni-classification     # those parts first
    python -m bench.long_study crafter-ellm-reward-free --report-only       # tables from what ran
    python -m bench.long_study --list

Each study (``STUDIES``) is a list of parts: (part of the study, task file as committed, and
optionally what the part changes in it: its methods, a method's sweep grid, its env steps and
budgets). Every method and seed of a part runs as one ``tune_run.py`` sweep of its own (its
budget, its settings, the sweep grid of that method), under ``bench/runs/<study>/``. The plan
(tasks, methods, seeds, env steps, budgets, metric) is written to ``bench/results/<study>.md``
before the first trial; the tables and the plot are rewritten after every part. Re-running the
command continues: finished parts are read from the JSON, an interrupted one resumes from its
checkpoints when its Tune folder is still there (the same machine) and starts again when not.

The numbers per seed are the results table's (``rl_bk.experiments.results.trial_row``): the
task's main metric at each budget and at the end, the env return, and for tasks with a
success threshold the env steps to reach it. The BK reproduction has its own script
(``bench/bk_reproduction.py``: greedy evaluation, its tables); this one serves the others.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("RAY_AIR_NEW_OUTPUT", "0")

ROOT = Path(__file__).resolve().parents[1]

from rl_bk import metrics as M  # noqa: E402  (after the thread setting above)

RESULTS = ROOT / "bench" / "results"
RUNS = ROOT / "bench" / "runs"

#: The Qwen BK study's parts: BK's PPO, each bk-* with Qwen's knowledge and with the oracle's
#: (task-agnostic both), every trial in the same layout (each sweep runs a method's two
#: knowledge sources at once, one CPU each, as the transfer suite ran: bk_layout.md).
_QWEN_BK = {
    "methods": ["ppo", "bk-code", "bk-pref", "bk-goal"],
    "seeds": [100, 101, 102, 103, 104],
    "sweep": {
        "ppo": {"extrinsic_coeff": [10.0]},
        **{
            m: {"include_mission": [False], "backend": ["llamacpp", "oracle"]}
            for m in ("bk-code", "bk-pref", "bk-goal")
        },
    },
    "sections": {
        "env_runners": {"num_env_runners": 0, "num_envs_per_env_runner": 8},
        "learner": {"threads": 1},
    },
}

#: study -> [(part name, task)], run in this order. The questions are the issues' goals.
STUDIES: dict[str, dict] = {
    "ptgm-fair": {
        "question": "Does PTGM reach 0.9 success in fewer env steps than both ppo and bc-ppo "
        "(flat PPO cloned from the same demonstrations) on a target the "
        "demonstrations never pursued, and does ptgm beat ptgm-no-kl? On "
        "Crafter, with a dataset from RND-PPO's trained policy, does it unlock "
        "more achievements?",
        "parts": [
            ("redkey-s20", "babyai-gotolocal-redkey-s20-ptgm"),
            ("crafter", "crafter-text-ptgm"),
        ],
    },
    "crafter-ellm-reward-free": {
        "question": "Reward-free Crafter: does ELLM with the oracle's suggestions (ORACLE) "
        "unlock more achievements per episode than the novelty baseline and RND, "
        "beyond the seed spread? ELLM with the embedded 135M model is plumbing, "
        "not knowledge.",
        # The task's ellm grid holds the oracle and the embedded LLM. The embedded model labels
        # at ~15 env steps/s on 2 CPUs (~5.5 h per 300k trial), so its row is a part of its
        # own at a smaller budget, run after the others rather than beside them in one sweep.
        "parts": [
            (
                "crafter",
                "crafter-text-ellm-reward-free",
                {"sweep": {"ellm": {"backend": ["oracle"]}}},
            ),
            (
                "crafter-embedded-llm",
                "crafter-text-ellm-reward-free",
                {
                    "methods": ["ellm"],
                    "sweep": {"ellm": {"backend": ["llamacpp"]}},
                    "steps": 30_000,
                    "budgets": [10_000, 20_000, 30_000],
                },
            ),
        ],
        # The task file runs ELLM's 1M; these CPUs allow 300k (a departure, said in the plan).
        "steps": 300_000,
        "budgets": [100_000, 200_000, 300_000],
    },
    "crafter-ellm-tech-tree": {
        "question": "Reward-free Crafter, a test planned after crafter-ellm-reward-free's "
        'per-achievement table showed a lead: leaving out "wake up" (which '
        'the novelty baseline collects by paying "sleep" at any time), does '
        "ELLM with the oracle's suggestions (ORACLE) unlock more achievements per "
        "episode than novelty, beyond the seed spread, on seeds that study did "
        "not use?",
        "parts": [
            (
                "crafter",
                "crafter-text-ellm-reward-free",
                {
                    "methods": ["ellm", "ellm-novelty"],
                    "sweep": {"ellm": {"backend": ["oracle"]}},
                    "seeds": [3, 4, 5],
                },
            )
        ],
        "steps": 300_000,
        "budgets": [100_000, 200_000, 300_000],
        # The primary measure: achievements per episode minus these achievements' unlock
        # rates, each trial's last-100-episode means at its end.
        "leave_out": ["wake_up"],
    },
    "nethack-oni": {
        "question": "NetHack Score: are ONI-Retrieval and ONI-Classification (oracle labels) "
        "above oni-none beyond the seed spread, with ONI's extrinsic weight 0.1 "
        "and with no env reward, and is classification no longer identical to "
        "none?",
        "parts": [("extrinsic-0.1", "nethack-score"), ("reward-free", "nethack-score-reward-free")],
        # The task files run 2M env steps; these CPUs allow 300k (a departure).
        "steps": 300_000,
        "budgets": [100_000, 200_000, 300_000],
    },
    "appo-learning": {
        "question": "Does APPO learn as well per env step as PPO, on the same task files: "
        "BabyAI-Text RedBall-S20 (BK's PPO baseline, 10 x reward, BK's network) "
        "and NetHack Score (oni-none, ONI's extrinsic weight)? Paired by seed, "
        "the area under each curve.",
        "parts": [
            (
                "babyai-redball-s20",
                "babyai-gotolocal-redball-s20",
                {
                    "methods": ["ppo"],
                    "sweep": {"ppo": {"extrinsic_coeff": [10.0], "algorithm": ["ppo", "appo"]}},
                    "steps": 300_000,
                    "budgets": [100_000, 200_000, 300_000],
                },
            ),
            (
                "nethack-score",
                "nethack-score",
                {
                    "methods": ["oni-none"],
                    "sweep": {"oni-none": {"algorithm": ["ppo", "appo"]}},
                    "steps": 1_000_000,
                    "budgets": [250_000, 500_000, 1_000_000],
                },
            ),
        ],
        # Each APPO variant against the PPO one with the same other settings, seed by seed.
        "paired": ("algorithm=appo", "algorithm=ppo"),
    },
    "appo-passes": {
        "question": "appo-learning found APPO below PPO per env step on both tasks (area "
        "under the curve: NetHack Score's game score -4.0 [-5.3, -1.3], 3 seeds; "
        "BabyAI-Text RedBall-S20's training success -0.250 [-0.302, -0.180], 5 "
        "seeds), with about 1.1-1.25 passes over each sample against PPO's 4. "
        "With PPO's 4 passes (4 epochs over each batch, each batch taken once "
        "from the circular buffer), does APPO learn as well per env step as PPO? "
        "Paired by seed, on seeds appo-learning did not use.",
        "parts": [
            (
                "nethack-score",
                "nethack-score",
                {
                    "methods": ["oni-none"],
                    "seeds": [3, 4, 5],
                    "sweep": {"oni-none": {"algorithm": ["ppo", "appo"]}},
                    "sections": {
                        "appo": {"num_epochs": 4, "circular_buffer_iterations_per_batch": 1}
                    },
                    "steps": 1_000_000,
                    "budgets": [250_000, 500_000, 1_000_000],
                },
            ),
            # Planned after the NetHack part (before any of its runs): BK's PPO
            # baseline as appo-learning ran it, its task layout, the passes changed.
            (
                "babyai-redball-s20",
                "babyai-gotolocal-redball-s20",
                {
                    "methods": ["ppo"],
                    "seeds": [5, 6, 7],
                    "sweep": {"ppo": {"extrinsic_coeff": [10.0], "algorithm": ["ppo", "appo"]}},
                    "sections": {
                        "appo": {"num_epochs": 4, "circular_buffer_iterations_per_batch": 1}
                    },
                    "steps": 300_000,
                    "budgets": [100_000, 200_000, 300_000],
                },
            ),
        ],
        "paired": ("algorithm=appo", "algorithm=ppo"),
    },
    "nethack-oni-appo": {
        "question": "What the speed buys: NetHack Score reward-free on APPO at 3M env steps "
        "(10 x the PPO study): are ONI-Retrieval and ONI-Classification (oracle "
        "labels) above oni-none beyond the seed spread?",
        "parts": [
            (
                "reward-free",
                "nethack-score-appo-reward-free",
                {
                    "methods": [
                        "oni-none",
                        "oni-retrieval",
                        "oni-classification",
                        "oni-ranking",
                        "motif",
                    ]
                },
            )
        ],
        # The task file's 2M is ONI's own order of magnitude lower (2B); 3M is the issue's.
        "steps": 3_000_000,
        "budgets": [1_000_000, 2_000_000, 3_000_000],
        # Added to the report after 9 of the 15 trials were in (the plan's measure, the value
        # at each budget, stays): each method against oni-none, seed by seed, by area.
        "paired": "oni-none",
    },
    "qwen-bk": {
        "question": "Does BK's knowledge help when a 1.5B model running on these two cores "
        "makes it? On BK's task (GoToLocal RedBall-S20) and on an unseen task where "
        "the oracle's shaping helped at 500k (PurpleKey-S25), each bk-* with "
        "Qwen2.5-Coder-1.5B's knowledge and with the task-agnostic oracle's, built "
        "from the same dataset, against ppo (BK's 10 x reward) and Qwen against the "
        "oracle, paired by seed on seeds no study has used.",
        "parts": [
            ("redball-s20", "babyai-gotolocal-redball-s20", _QWEN_BK),
            ("purplekey-s25", "babyai-gotolocal-purplekey-s25", _QWEN_BK),
        ],
        "steps": 500_000,
        "budgets": [100_000, 200_000, 300_000, 500_000],
        # Primary: the sampled policy's evaluation success (ppo's greedy area sits near its
        # floor on the unseen tasks at 500k: bk-reproduction.md); greedy (BK's) and training
        # beside it.
        "paired": ["ppo", ("backend=llamacpp", "backend=oracle")],
        "seed_major": True,
        "curves": [M.EVAL_SAMPLED_SUCCESS_RATE, M.EVAL_SUCCESS_RATE, M.SUCCESS_RATE],
        "notes": [
            "What the design can detect (written before the first trial): the transfer "
            "suite's seed-to-seed standard deviation of a bk-* minus ppo paired difference, "
            "pooled over its 18 method-task groups of 3 seeds (36 degrees of freedom), is "
            "0.104 on the sampled area, 0.076 on the greedy area and 0.090 on the training "
            "area. With 5 paired seeds, a paired t test at 0.05 (two-sided) finds a true "
            "difference 80% of the time when it is at least 0.175 (sampled), 0.128 (greedy) "
            "and 0.152 (training), per task; smaller effects may be there and go unseen.",
            "Verdicts: above (below) where the 95% t interval of the paired difference lies "
            "above (below) zero; otherwise the mean alone. Every planned trial is reported; "
            "none is dropped or re-run after being seen.",
        ],
        "knowledge": "Built once before the first trial, pinned numerics, task-agnostic (no "
        "mission), on GoToLocal-Pretraining-S20's RND dataset, by `rl-bk "
        "knowledge build --task babyai-gotolocal-redball-s20 --kinds "
        "bk-code,bk-goal,bk-pref --backend llamacpp` (Qwen2.5-Coder-1.5B, the "
        "packaged default; preferences from token scores in both orders, BK's hard "
        "labels) and `--backend oracle`; the label sets are committed under "
        "`bench/results/labels/`. Each trial's `knowledge.json` (artifact and "
        "dataset fingerprints, model digest) is kept in the results JSON.",
    },
    "qwen-oni": {
        "question": "ONI with a real LLM's labels: NetHack Score reward-free on APPO at 3M env "
        "steps (as nethack-oni-appo), labels from Qwen2.5-Coder-1.5B in the Serve labeler app "
        "in the training loop (asynchronous, never on the per-step path): are oni-retrieval and "
        "oni-classification with Qwen's labels above oni-none, and how do they compare with "
        "oni-retrieval on the oracle's labels? How many distinct messages were labelled, how "
        "long did labels take to arrive, and how much did labelling slow training?",
        "parts": [
            (
                "reward-free",
                "nethack-score-appo-reward-free",
                {
                    "methods": ["oni-none", "oni-retrieval", "oni-classification"],
                    "seeds": [100, 101, 102],
                    "sweep": {
                        "oni-retrieval": {"backend": ["llamacpp", "oracle"]},
                        "oni-classification": {"backend": ["llamacpp"]},
                    },
                    "sections": {"labeler": {"mode": "serve"}},
                },
            )
        ],
        "steps": 3_000_000,
        "budgets": [1_000_000, 2_000_000, 3_000_000],
        "paired": ["oni-none", ("backend=llamacpp", "backend=oracle")],
        "seed_major": True,
        # Each variant trains alone: its env steps/s and its labels' latency are its own.
        "one_variant_per_sweep": True,
        "curves": [M.GAME_SCORE_MEAN],
        "final_columns": [
            "captions_seen",
            "labels_received",
            "labels_pending",
            "captions_annotated_fraction",
            "steps_labelled_fraction",
            "label_latency_s_p50",
            "label_latency_s_p90",
        ],
        "notes": [
            "Labels: every labelled row (Qwen's and the oracle's) through the Serve labeler app "
            "(`labeler.mode: serve`), one replica per backend on the same two CPUs as the "
            "trial; Qwen2.5-Coder-1.5B answers ONI's helpful question from its yes/no token "
            "scores. The slowdown is each row's env steps/s against oni-none's, seed by seed.",
            "Verdicts: above (below) where the 95% t interval of the paired difference of the "
            "area under the game-score curve lies above (below) zero; otherwise the mean alone. "
            "What the design can detect (written before the first trial): in "
            "nethack-oni-appo, the seed-to-seed standard deviation of an oni-* minus oni-none "
            "paired difference of game-score areas, pooled over its 4 methods (8 degrees of "
            "freedom), is 1.39 points (oni-none's area: 34.6). With 3 paired seeds a paired t "
            "test at 0.05 (two-sided) finds a true difference 80% of the time when it is at "
            "least 4.6 points; smaller effects may be there and go unseen.",
        ],
    },
}


def study_parts(study: str) -> list[tuple[str, str, dict]]:
    """(part name, task file, what the part changes in the task) for each part of a study."""
    return [(p[0], p[1], p[2] if len(p) > 2 else {}) for p in STUDIES[study]["parts"]]


def _load(task_name: str, smoke: bool, study: str | None = None, changes: dict | None = None):
    """The task as the study runs it: the task file with the part's changes (methods, a
    method's sweep grid, seeds, fields of the task's sections, validated as the task file's
    are) and the part's or else the study's budget (never under --smoke, which keeps the smoke
    settings)."""
    from rl_bk.experiments.task_config import load_task

    task = load_task(task_name, smoke=smoke)
    changes = changes or {}
    update: dict = {}
    if "methods" in changes:
        update["methods"] = list(changes["methods"])
    if "sweep" in changes:
        update["sweep"] = {**task.sweep, **changes["sweep"]}
    if "seeds" in changes:
        update["seeds"] = list(changes["seeds"])
    for section, fields in changes.get("sections", {}).items():
        current = getattr(task, section)
        update[section] = type(current).model_validate({**current.model_dump(), **fields})
    # Env steps and budgets go together: a part that sets its steps sets its budgets too.
    spec = changes if "steps" in changes else STUDIES.get(study or "", {})
    if "steps" in spec and not smoke:
        update["stop"] = task.stop.model_copy(update={"num_env_steps": spec["steps"]})
        update["budgets"] = spec["budgets"]
    return task.model_copy(update=update) if update else task


def parts(study: str, smoke: bool) -> list[tuple[str, str, object]]:
    """(part id ``<part>/<method>/<seed>``, method, the task narrowed to that seed) in the
    order they run."""
    from bench.study import seed_parts

    out = []
    split = STUDIES[study].get("one_variant_per_sweep", False)
    for name, task_name, changes in study_parts(study):
        task = _load(task_name, smoke, study, changes)
        for unit, method, narrowed in sweep_units(task, split):
            out += [
                (part, method, seeded) for part, seeded, _ in seed_parts(f"{name}/{unit}", narrowed)
            ]
    return out


def sweep_units(task, split: bool) -> list[tuple[str, str, object]]:
    """(unit, method, task) for each sweep a seed runs: one per method (its whole grid at
    once), or with ``split`` one per grid point (``<method>@<k>=<v>,...``), so that each
    variant trains alone and its speed and its labels' latency are its own."""
    import itertools

    units = []
    for method in task.methods:
        grid = task.sweep.get(method, {})
        if not split or not grid:
            units.append((method, method, task))
            continue
        keys = sorted(grid)
        for values in itertools.product(*(grid[k] for k in keys)):
            point = {k: [v] for k, v in zip(keys, values)}
            tag = ",".join(f"{k}={v}" for k, v in zip(keys, values))
            sweep = {**task.sweep, method: point}
            units.append((f"{method}@{tag}", method, task.model_copy(update={"sweep": sweep})))
    return units


def run_order(
    all_parts: list[tuple[str, str, object]], first: list[str], seed_major: bool
) -> list[tuple[str, str, object]]:
    """The parts in the order they run: ``first``'s methods before the rest; within that,
    the plan's order (each method's seeds in turn), or with ``seed_major`` each part's
    seeds in turn (every method of a seed before the next seed: a study cut short still
    has complete paired seeds)."""

    index = {p[0]: i for i, p in enumerate(all_parts)}

    def rank(p: tuple[str, str, object]) -> tuple:
        preferred = first.index(p[1]) if p[1] in first else len(first)
        if not seed_major:
            return (preferred, index[p[0]])
        name, _, seed = p[0].split("/")
        part_rank = min(index[q[0]] for q in all_parts if q[0].split("/")[0] == name)
        return (preferred, part_rank, int(seed), index[p[0]])

    return sorted(all_parts, key=rank)


def _task_file_steps(study: str) -> str:
    """The env steps each of the study's task files runs on its own, in words."""
    from rl_bk.experiments.task_config import load_task

    steps = {t: load_task(t).stop.num_env_steps for _, t, _ in study_parts(study)}
    return ", ".join(f"`{t}` {n:,}" for t, n in steps.items())


def _plan(study: str, facts: dict, smoke: bool) -> list[str]:
    from rl_bk import metrics as M

    spec = STUDIES[study]
    lines = [
        f"# {study}",
        "",
        f"`{facts['command']}` (started {facts['date']}, "
        f"{facts['machine']}). Written by `bench/long_study.py`; the plan below was fixed "
        "before the first run.",
        "",
        f"**Question.** {spec['question']}",
        "",
        "## Plan",
        "",
        "Every task file as committed (its methods, sweep grid, settings); seeds, "
        "budgets and metric below, none dropped or swapped after being seen. Numbers: "
        "mean ± std over seeds of each trial's value at the budget (the training "
        "episodes' mean over the last 100), and per seed where a threshold applies.",
        *(
            [
                "",
                f"Primary measure: {_without_name(spec['leave_out'])} per trial at "
                "its end, that is achievements per episode minus the unlock rates of "
                f"{', '.join(n.replace('_', ' ') for n in spec['leave_out'])} (each the "
                "training episodes' mean over the last 100).",
            ]
            if "leave_out" in spec
            else []
        ),
        *(
            [
                "",
                f"Env steps: {spec['steps']:,} per trial (the task files: "
                f"{_task_file_steps(study)}); the papers' budgets do not fit these CPUs: a "
                "departure, not the papers' setting.",
            ]
            if "steps" in spec
            else []
        ),
        *(["", f"Knowledge: {spec['knowledge']}"] if "knowledge" in spec else []),
        *(
            [
                "",
                "Paired measures: the normalised area under each of these curves, "
                + ", ".join(f"`{c}`" for c in spec["curves"])
                + " (the first is primary).",
            ]
            if "curves" in spec
            else []
        ),
        *[line for note in spec.get("notes", []) for line in ("", note)],
        "",
        "| part | task | methods | seeds | env steps | budgets | metric |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, task_name, changes in study_parts(study):
        t = _load(task_name, smoke, study, changes)
        methods = ", ".join(
            f"{m} ({_grid(t.sweep[m])})" if m in changes.get("sweep", {}) else m for m in t.methods
        )
        if sections := changes.get("sections"):
            methods += "; with " + ", ".join(
                f"{sec}.{k}={v}" for sec, fields in sections.items() for k, v in fields.items()
            )
        lines.append(
            f"| {name} | `{task_name}` | {methods} | {t.seeds} | "
            f"{t.stop.num_env_steps:,} | {', '.join(f'{b:,}' for b in t.budgets)} | "
            f"{M.MAIN_METRICS[t.metric]} |"
        )
    return lines


def _grid(grid: dict[str, list]) -> str:
    return ", ".join(f"{k}={'|'.join(str(v) for v in vs)}" for k, vs in grid.items())


def _table(rows: list[dict]) -> list[str]:
    """One line per variant: mean ± std over its seeds of every column any row has (a
    method's own columns, PTGM's KL or BC-PPO's cloning accuracy, are "–" for the others)."""
    from bench.study import mean_sd
    from rl_bk.experiments.results import DONE

    # as the results table: only finished trials enter the means (a row without a status
    # predates the column)
    rows = [r for r in rows if r.get("status", DONE) == DONE]
    if not rows:
        return []
    skip = {"variant", "seed", "env_steps_per_s", "status"}
    cols = [c for c in dict.fromkeys(c for r in rows for c in r) if c not in skip]
    variants = list(dict.fromkeys(r["variant"] for r in rows))
    lines = [
        "| variant | seeds | " + " | ".join(c.replace("_", " ") for c in cols) + " |",
        "|---|---|" + "---|" * len(cols),
    ]
    for v in variants:
        mine = [r for r in rows if r["variant"] == v]
        # general formats: columns range from KL values near 0 to returns in the thousands
        cells = [mean_sd([r[c] for r in mine if c in r], ".3g", ".2g") for c in cols]
        lines.append(f"| {v} | {len(mine)} | " + " | ".join(cells) + " |")
    return lines


def _achievement_table(entries: list[dict], variants: list[str] = ()) -> list[str]:
    """Crafter: each achievement's unlock rate (% of the last 100 training episodes at the
    end), mean ± std over seeds per variant (in the order of ``variants``, then any other);
    the most often unlocked first. Empty when no entry has rates (not Crafter)."""
    from bench.study import mean_sd

    kept: dict[str, list[dict[str, float]]] = {}
    for entry in entries:
        for variant, rates in entry.get("achievements", {}).items():
            kept.setdefault(variant, []).append(rates)
    if not kept:
        return []
    per_variant = {v: kept[v] for v in [*variants, *kept] if v in kept}
    without = [v for v in variants if v not in kept]
    names = list(dict.fromkeys(n for seeds in per_variant.values() for r in seeds for n in r))

    def mean(name: str) -> float:
        values = [r.get(name, math.nan) for seeds in per_variant.values() for r in seeds]
        ok = [v for v in values if v is not None and not math.isnan(v)]
        return sum(ok) / len(ok) if ok else -1.0

    lines = [
        "Unlock rate per achievement (% of episodes; mean ± std over seeds):",
        "",
        "| achievement | " + " | ".join(per_variant) + " |",
        "|---|" + "---|" * len(per_variant),
    ]
    for name in sorted(names, key=lambda n: (-mean(n), n)):
        cells = [
            mean_sd(
                [100 * r[name] if r.get(name) is not None else math.nan for r in seeds],
                ".3g",
                ".2g",
            )
            for seeds in per_variant.values()
        ]
        lines.append(f"| {name.replace('_', ' ')} | " + " | ".join(cells) + " |")
    if without:  # finished before the rates were kept, with their runs no longer here
        lines += [
            "",
            f"Not kept for: {', '.join(without)} (finished before these rates "
            "were kept, and its runs are no longer on the machine that ran them).",
        ]
    return lines


def _without_name(names: list[str]) -> str:
    return "achievements_per_episode_without_" + "_".join(names)


def _rows_leaving_out(entries: list[dict], names: list[str]) -> list[dict]:
    """Each entry's rows with one more column: achievements per episode minus the unlock
    rates of ``names`` at the trial's end (an episode's count is the sum of its unlocks, so
    the two last-100-episode means subtract exactly); NaN where the rates were not kept."""
    out = []
    for entry in entries:
        for row in entry["rows"]:
            rates = entry.get("achievements", {}).get(row["variant"])
            left = (
                row["achievements_per_episode"] - sum(rates[n] for n in names)
                if rates and all(n in rates for n in names)
                else math.nan
            )
            out.append({**row, _without_name(names): left})
    return out


def _baseline_of(spec: tuple[str, str] | str, label: str) -> str | None:
    """The variant a variant is paired with: with ``(tag, baseline_tag)`` the same label with
    ``baseline_tag`` in place of ``tag`` (variants without ``tag`` are not paired); with a
    label, that variant for every other one (every method against one baseline method)."""
    if isinstance(spec, str):
        return spec if label != spec else None
    method_tag, baseline_tag = spec
    return label.replace(method_tag, baseline_tag) if method_tag in label else None


def _shown_as(variant: str | None, labels: list[str]) -> str | None:
    """The label among ``labels`` that names ``variant``: itself, or it followed by what the
    tables add (a sweep setting, " (ORACLE)")."""
    if variant is None:
        return None
    return next(
        (label for label in labels if label == variant or label.startswith(variant + " ")), None
    )


def _paired_table(
    specs: list[tuple[str, str] | str], curves: list[dict], columns: list[str], budget: int
) -> list[str]:
    """Each variant against its baseline under each spec (:func:`_baseline_of`), in the order
    of ``columns`` within each pair: per column, the normalised
    area under each seed's curve up to ``budget`` (the mean of its reports;
    :mod:`bench.learning_measures`), and the paired difference with its 95% t interval
    (both areas over the seeds the two share). Curves that stop short of the budget are left
    out and counted."""
    from bench.learning_measures import (
        curve_points,
        interval_text,
        normalised_area,
        paired_difference,
        signed,
    )
    from rl_bk import metrics as M
    from rl_bk.experiments.results import CURVE_NAMES

    labels = list(dict.fromkeys(c["label"] for c in curves))
    specs = specs if isinstance(specs, list) else [specs]
    pairs = [
        (label, base)
        for spec in specs
        for label in labels
        if (base := _shown_as(_baseline_of(spec, label), labels)) not in (None, label)
    ]
    lines = []
    for label, base in pairs:
        for column in columns:
            areas: dict[str, dict[int, float]] = {label: {}, base: {}}
            short = 0
            for c in curves:
                if c["label"] not in areas or column not in c["progress"]:
                    continue
                points = curve_points(c["progress"][M.ENV_STEPS], c["progress"][column])
                area = normalised_area(points, budget, tolerance=max(21_000, budget // 30))
                if area.complete:
                    areas[c["label"]][c["seed"]] = area.value
                else:
                    short += 1
            if not areas[label] or not areas[base]:
                continue
            d = paired_difference(areas[label], areas[base])

            def mean(values: dict[int, float], seeds=d.seeds) -> str:  # the paired seeds only
                return f"{sum(values[s] for s in seeds) / len(seeds):.3g}"

            name = (
                "greedy success (evaluation)"
                if column == M.EVAL_SUCCESS_RATE
                else CURVE_NAMES.get(column, column)
            )
            lines.append(
                f"| {label} − {base} | {name} | "
                f"{len(d.seeds)} | {mean(areas[label])} | {mean(areas[base])} | "
                f"{signed(d.mean)} | {interval_text(d)} | {short or ''} |"
            )
    if not lines:
        return []
    return [
        f"Paired by seed, the normalised area under each curve up to {budget:,} env steps "
        "(the mean of its reports: training curves over the last 100 episodes at every "
        "iteration, greedy evaluations every 20k), and the mean paired difference with its "
        "95% Student t interval over the seeds (`bench.learning_measures.t_interval`):",
        "",
        "| pair | curve | seeds | area | baseline's area | difference | 95% t interval | "
        "curves short of the budget |",
        "|---|---|---|---|---|---|---|---|",
        *lines,
    ]


def write_report(study: str, facts: dict, finished: dict, smoke: bool) -> None:
    from bench.study import is_done, plot_study, write_keeping_reading
    from rl_bk import metrics as M
    from rl_bk.experiments.results import CURVE_NAMES

    lines = [*_plan(study, facts, smoke), "", "## Results", ""]
    for name, task_name, changes in study_parts(study):
        mine = {p: f for p, f in finished.items() if p.split("/")[0] == name}
        lines += [f"### {name} (`{task_name}`)", ""]
        if not mine:
            lines += ["Not run yet.", ""]
            continue
        task = _load(task_name, smoke, study, changes)
        leave_out = STUDIES[study].get("leave_out")
        rows = sorted(
            _rows_leaving_out(list(mine.values()), leave_out)
            if leave_out
            else (r for f in mine.values() for r in f["rows"]),
            key=lambda r: (
                task.methods.index(r["variant"].split()[0])
                if r["variant"].split()[0] in task.methods
                else 99,
                r["variant"],
                r["seed"],
            ),
        )
        lines += [*_table(rows), ""]
        variants = list(dict.fromkeys(r["variant"] for r in rows))
        if table := _achievement_table(list(mine.values()), variants):
            lines += [*table, ""]
        if spec := STUDIES[study].get("paired"):
            main_metric = M.MAIN_METRICS[task.metric]
            columns = STUDIES[study].get("curves") or [
                main_metric,
                *([M.EVAL_SUCCESS_RATE] if main_metric == M.SUCCESS_RATE else []),
            ]
            curves = [c for f in mine.values() for c in f.get("curves", [])]
            if table := _paired_table(spec, curves, columns, task.stop.num_env_steps):
                lines += [*table, ""]
        if knowledge := _knowledge_lines(mine):
            lines += [*knowledge, ""]
        commits = ", ".join(
            f"`{c}`" for c in sorted({f.get("commit", "not recorded") for f in mine.values()})
        )
        lines.append(
            f"Runs (not committed): `bench/runs/{study}/{name}/<method>/<seed>/`; code: {commits}."
        )
        main = M.MAIN_METRICS[task.metric]
        plot = RESULTS / f"{study}-{name}.png"
        if plot_study(
            [c for f in mine.values() for c in f.get("curves", [])],
            {CURVE_NAMES.get(main, main): main},
            plot,
            f"{study}, {name}",
        ):
            lines.append(f"Curves: `{plot.name}`.")
        split = STUDIES[study].get("one_variant_per_sweep", False)
        missing = [
            f"{unit} (seeds {', '.join(str(s) for s in left)})"
            for unit, _, _ in sweep_units(task, split)
            if (left := [s for s in task.seeds if not is_done(f"{name}/{unit}/{s}", mine)])
        ]
        if missing:
            lines.append(f"Still to run: {'; '.join(missing)}.")
        lines.append("")
    path = RESULTS / f"{study}.md"
    write_keeping_reading(path, "\n".join(lines))
    (RESULTS / f"{study}.json").write_text(
        json.dumps({**facts, "finished": finished}, indent=2, default=float)
    )


def _finish(task, run_dir: Path, curves: tuple[str, ...] = (), final: tuple[str, ...] = ()) -> dict:
    """A finished part's numbers, one row per trial, and its per-report curves (the study's
    ``curves`` kept beside the usual ones); ``final`` adds each named metric's last value to
    the rows (:func:`last_values`)."""
    from rl_bk import metrics as M
    from rl_bk.experiments.results import trial_row

    main = M.MAIN_METRICS[task.metric]
    threshold = task.success_threshold if main == M.SUCCESS_RATE else None
    records = _smoothed_records(run_dir)
    rows = [
        {**trial_row(record, threshold, main, list(task.budgets)), **last_values(record, final)}
        for record in records
    ]
    from bench.study import code_commit, trial_curves

    rel = run_dir.relative_to(ROOT) if run_dir.is_relative_to(ROOT) else run_dir
    out = {
        "run_dir": str(rel),
        "rows": json.loads(json.dumps(rows, default=float)),
        "curves": trial_curves(run_dir, extra=(main, *curves)),
        "commit": code_commit(),
    }
    if achievements := _achievements(records):
        out["achievements"] = achievements
    if (used := run_dir / "knowledge.json").is_file():
        out["knowledge"] = json.loads(used.read_text())
    return out


def _knowledge_lines(finished: dict) -> list[str]:
    """Which knowledge the part's trials used: per variant, each distinct artifact (its
    fingerprint, the dataset's, and whose labels it holds) and how many trials used it."""
    seen: dict[tuple, list[str]] = {}
    for part, entry in finished.items():
        for variant, k in entry.get("knowledge", {}).items():
            key = (
                variant,
                k.get("fingerprint"),
                k.get("dataset_fingerprint"),
                k.get("labels") or "none",
            )
            seen.setdefault(key, []).append(part.split("/")[-1])
    if not seen:
        return []
    lines = [
        "Knowledge the trials used (artifact fingerprint, dataset fingerprint, labels):",
        "",
        "| variant | artifact | dataset | labels | seeds |",
        "|---|---|---|---|---|",
    ]
    for (variant, art, data, labels), seeds in sorted(seen.items(), key=str):
        lines.append(f"| {variant} | `{art}` | `{data}` | {labels} | {', '.join(seeds)} |")
    return lines


def last_values(record, names: tuple[str, ...]) -> dict[str, float]:
    """Each name's last reported value in a trial, found by the end of its result key (a
    learner's metric sits under a module's path: ``.../intrinsic/labels_received``)."""
    out = {}
    for name in names:
        columns = [c for c in record.progress.columns if c == name or c.endswith("/" + name)]
        values = record.progress[columns[0]].dropna() if columns else ()
        if len(values):
            out[name] = float(values.iloc[-1])
    return out


def _smoothed_records(run_dir: Path) -> list:
    """The trials of a part's Tune folder, labelled for tables, their per-episode metrics
    smoothed over the last 100 episodes, in (label, seed) order."""
    from rl_bk.experiments.results import (
        TrialRecord,
        display_label,
        records_from_tune_dir,
        smooth_over_episodes,
    )

    return [
        TrialRecord(display_label(r.label), r.seed, smooth_over_episodes(r.progress))
        for r in sorted(records_from_tune_dir(run_dir / "tune"), key=lambda r: (r.label, r.seed))
    ]


def _achievements(records: list) -> dict[str, dict[str, float]]:
    """Crafter: variant -> each achievement's unlock rate at the end of its trial, from
    smoothed records (the same last-100-episode means the Crafter score is computed from);
    empty for other envs."""
    from rl_bk.experiments.results import achievement_rates

    return {r.label: rates for r in records if (rates := achievement_rates(r.progress))}


def _add_missing_achievements(finished: dict) -> None:
    """Parts finished before their unlock rates were kept get them from their runs, where
    the runs are still on this machine (``bench/runs`` is not committed)."""
    for entry in finished.values():
        run_dir = ROOT / entry["run_dir"]
        if "achievements" not in entry and (run_dir / "tune").is_dir():
            if achievements := _achievements(_smoothed_records(run_dir)):
                entry["achievements"] = achievements


def _mend_resumed(study: str, finished: dict, smoke: bool) -> list[str]:
    """Parts kept before a resumed trial's reports past its checkpoint were dropped
    (:func:`rl_bk.experiments.results.without_superseded_reports`; their curves jump back in
    env steps) are read again from their runs, where the runs are still on this machine."""
    from bench.study import goes_back

    tasks = {part: task for part, _, task in parts(study, smoke)}
    mended = []
    for part, entry in finished.items():
        run_dir = ROOT / entry["run_dir"]
        resumed = any(map(goes_back, entry.get("curves", [])))
        if resumed and part in tasks and (run_dir / "tune").is_dir():
            fresh = _finish(
                tasks[part],
                run_dir,
                tuple(STUDIES[study].get("curves", ())),
                tuple(STUDIES[study].get("final_columns", ())),
            )
            # the columns the study's other parts have (today's rows may hold more)
            kept = set().union(*(row.keys() for row in entry["rows"]))
            fresh["rows"] = [{k: v for k, v in row.items() if k in kept} for row in fresh["rows"]]
            finished[part] = {
                **fresh,
                "commit": entry.get("commit"),
                "resumed": "curves read again from its run folder",
            }
            mended.append(part)
    return mended


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("study", nargs="?", choices=sorted(STUDIES))
    p.add_argument(
        "--methods",
        default=None,
        help="comma-separated: these methods' parts first (the plan unchanged)",
    )
    p.add_argument(
        "--only",
        default=None,
        help="comma-separated: run only these methods' parts now (the plan "
        "unchanged; e.g. while another method's knowledge is still being built)",
    )
    p.add_argument(
        "--smoke",
        action="store_true",
        help="the task files' smoke settings (a check that it runs; use with --out, "
        "never for the results of record)",
    )
    p.add_argument("--report-only", action="store_true", help="rewrite the tables and stop")
    p.add_argument(
        "--out",
        type=Path,
        default=None,
        help="write results and runs under this folder instead (smoke checks)",
    )
    p.add_argument("--list", action="store_true", help="the studies and their parts")
    args = p.parse_args()
    if args.list or args.study is None:
        for name in STUDIES:
            print(f"{name}: " + ", ".join(f"{n} ({t})" for n, t, _ in study_parts(name)))
        return 0

    from bench.paired_rounds import run_facts
    from bench.study import is_done, run_or_resume

    global RESULTS, RUNS
    if args.out is not None:
        RESULTS, RUNS = args.out / "results", args.out / "runs"
        RESULTS.mkdir(parents=True, exist_ok=True)
    study, results = args.study, RESULTS / f"{args.study}.json"
    # The command that runs the plan, whatever flags wrote it first (--report-only included).
    facts = {**run_facts("-m bench.long_study"), "command": f"python -m bench.long_study {study}"}
    finished: dict = {}
    if results.is_file():  # a continued study keeps its start and its finished methods
        old = json.loads(results.read_text())
        facts = {k: old[k] for k in ("command", "machine", "date") if k in old} or facts
        finished = old.get("finished", {})
        _add_missing_achievements(finished)
        for part in _mend_resumed(study, finished, args.smoke):
            print(f"[long-study] {study} {part}: resumed trial's curves read again", flush=True)
    write_report(study, facts, finished, args.smoke)
    if args.report_only:
        return 0
    first = args.methods.split(",") if args.methods else []
    only = set(args.only.split(",")) if args.only else None
    order = run_order(parts(study, args.smoke), first, STUDIES[study].get("seed_major", False))
    curves = tuple(STUDIES[study].get("curves", ()))
    final = tuple(STUDIES[study].get("final_columns", ()))
    for part, method, task in order:
        if is_done(part, finished) or (only is not None and method not in only):
            continue
        run_dir = run_or_resume(task, [method], task.stop.num_env_steps, RUNS / study / part)
        finished[part] = _finish(task, run_dir, curves, final)
        write_report(study, facts, finished, args.smoke)
        print(f"[long-study] {study} {part} done: {run_dir}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
