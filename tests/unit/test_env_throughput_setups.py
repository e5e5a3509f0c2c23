"""bench/env_throughput.py's PPO-against-APPO section: RLlib's timers made sums (the RLlib
behaviour it relies on), pooling rounds, and a table that a missing timer cannot break."""

from __future__ import annotations

import json
import math
import time

import pytest

from bench import env_throughput as et


class _Group:
    def __init__(self, members):
        self.members = members

    def foreach_learner(self, func):
        return [func(m) for m in self.members]

    def foreach_env_runner(self, func, local_env_runner=True):
        return [func(m) for m in self.members]


class _Holder:
    def __init__(self, metrics):
        self.metrics = metrics


def test_sum_timers_turn_rllibs_moving_averages_into_sums():
    from ray.rllib.utils.metrics.metrics_logger import MetricsLogger

    algo_metrics, learner, runner = MetricsLogger(root=True), MetricsLogger(), MetricsLogger()
    # APPO's learner thread is already waiting for its first batch: its timer exists, an EMA.
    with learner.log_time(("__all_modules__", "learner_thread_in_queue_wait_timer")):
        time.sleep(0.05)

    class Algo:
        metrics = algo_metrics
        learner_group = _Group([_Holder(learner)])
        env_runner_group = _Group([_Holder(runner)])

    et.sum_timers(Algo, et.APPO_TIMERS, et.LEARNER_THREAD_TIMERS)

    for iteration in range(2):
        for _ in range(3):  # RLlib's own calls, with their default (moving-average) settings
            with algo_metrics.log_time(("timers", "sample")):
                time.sleep(0.01)
            with learner.log_time(("__all_modules__", "learner_thread_in_queue_wait_timer")):
                time.sleep(0.01)
            runner.log_value("time_between_sampling", 0.5)
        algo_metrics.aggregate([learner.reduce()], key="learners")
        algo_metrics.aggregate([runner.reduce()], key="env_runners")
        result = algo_metrics.reduce(compile=True)
        # The main loop's timer: this iteration's sum (not an average over all of them).
        assert 0.03 <= result["timers"]["sample"] < 0.2
        # The learner's and runners': lifetime sums, the first wait (before) not counted.
        wait = result["learners"]["__all_modules__"]["learner_thread_in_queue_wait_timer"]
        assert 0.03 * (iteration + 1) <= wait < 0.04 + 0.15 * (iteration + 1)
        assert result["env_runners"]["time_between_sampling"] == pytest.approx(
            1.5 * (iteration + 1)
        )


def _run(rate: float, timers: dict[str, float]) -> dict:
    return {
        "env_steps_per_s": rate,
        "env_steps_timed": rate * 10,
        "wall_s": 10.0,
        "iterations": 5,
        "iteration_s": 2.0,
        "timers_s": timers,
        "samples_trained": rate * 10,
        "training_step_calls_per_iteration": 1.0,
    }


def test_pooled_rounds_and_the_table_take_missing_timers_as_nan():
    ppo = [_run(1000, {"sampling": 0.5, "learner update": 1.0, "weight sync": 0.01})]
    appo = [_run(2000, {**dict.fromkeys(et.TIMER_COLUMNS, 0.2), "weight sync": math.nan})]
    pooled = {"ppo": et.pool(ppo), "appo": et.pool(appo)}
    assert pooled["appo"]["env_steps_per_s"] == 2000
    assert math.isnan(pooled["ppo"]["timers_s"]["learner thread update"])
    assert math.isnan(pooled["appo"]["timers_s"]["weight sync"])
    for r in pooled.values():
        r["layout"], r["over_raw"] = "2 runner(s) x 4 envs", r["env_steps_per_s"] / 4000
    results = {
        "babyai": {
            "task": "babyai-gotolocal-redball-s20",
            "raw_captioned_steps_per_s_same_run": 4000.0,
            "appo_over_ppo": 2.0,
            **pooled,
        }
    }
    meta = {
        "command": "python -m bench.env_throughput --appo-only",
        "date": "today",
        "machine": "x86_64, 2 CPUs",
        "load_average_at_end": (1.0, 1.0, 1.0),
    }
    lines = et.appo_section(results, meta, iterations=5, rounds=1, pairs=6)
    assert lines[0] == et.APPO_HEADING
    table = [line for line in lines if line.startswith("|")]
    assert len(table) == 4 and len({line.count("|") for line in table}) == 1
    ppo_row, appo_row = table[2], table[3]
    assert "| PPO |" in ppo_row and "| – | – |" in ppo_row and "| 0.25 |" in ppo_row
    assert "| APPO |" in appo_row and "| 2.00 |" in appo_row and "| 0.50 |" in appo_row


def test_unknown_family_is_refused(tmp_path):
    with pytest.raises(SystemExit):
        et.main(["--appo-only", "--families", "babyai,minecraft", "--out", str(tmp_path)])
    assert not list(tmp_path.iterdir())


def _fake_family(task: str) -> dict:
    pooled = {
        a: {
            **et.pool([_run(rate, {"sampling": 0.5})]),
            "layout": "1 runner(s) x 8 envs",
            "over_raw": rate / 4000,
        }
        for a, rate in (("ppo", 1000), ("appo", 1500))
    }
    return {
        "task": task,
        "raw_captioned_steps_per_s_same_run": 4000.0,
        **pooled,
        "appo_over_ppo": 1.5,
    }


def test_full_run_then_appo_only_rewrites_just_its_section(tmp_path, monkeypatch):
    raw = {
        "steps_per_s_captioned": 4000.0,
        "steps_per_s_uncaptioned": 4200.0,
        "caption_share_of_step_time": 0.05,
    }
    monkeypatch.setattr(et, "raw_throughput", lambda name, steps, pairs: raw)
    monkeypatch.setattr(
        et, "ppo_vs_appo", lambda families, *a: {f: _fake_family(et.TASKS[f]) for f in families}
    )
    assert et.main(["--quick", "--families", "babyai", "--out", str(tmp_path)]) == 0
    md = (tmp_path / "env_throughput.md").read_text()
    assert "| BabyAI-Text-GoToLocal-RedBall-S20-v0 | 4200 | 4000 | 5.0% |" in md
    assert md.count(et.APPO_HEADING) == 1 and "babyai-gotolocal-redball-s20" in md

    assert et.main(["--quick", "--appo-only", "--families", "nethack", "--out", str(tmp_path)]) == 0
    md = (tmp_path / "env_throughput.md").read_text()
    assert md.count(et.APPO_HEADING) == 1 and "| BabyAI-Text-GoToLocal-RedBall-S20-v0 | 4200" in md
    section = md.split(et.APPO_HEADING)[1]
    assert "nethack-score" in section and "babyai-gotolocal" not in section
    assert "--appo-only --families nethack" in section
    data = json.loads((tmp_path / "env_throughput.json").read_text())
    assert data["babyai"]["steps_per_s_captioned"] == 4000.0
    assert list(data["ppo_vs_appo"])[1:] == ["nethack"]
