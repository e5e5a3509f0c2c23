"""The peer benchmark's pooling and table: rates pooled as env steps over wall time, CPU
splits weighted by env steps, and the ratio rl-bk / peer."""

from __future__ import annotations

import math

import pytest

from bench import peer_throughput as pt


def _run(trainer: str, rate: float, steps: int, env_ms: float) -> dict:
    split = dict.fromkeys(pt.SPLIT, 0.1) | {"env": env_ms}
    return {
        "trainer": trainer,
        "layout": "1 x 8",
        "env_steps_per_s": rate,
        "env_steps_timed": steps,
        "cpu_ms_per_env_step": split,
        "cpu_ms_per_env_step_total": env_ms + 0.3,
    }


def test_rounds_pool_as_steps_over_wall_time_and_weight_cpu_by_steps():
    # 1,000 steps at 1,000/s (1 s) and 3,000 at 3,000/s (1 s): 4,000 steps in 2 s.
    p = pt.pooled([_run("a", 1000.0, 1000, 0.2), _run("a", 3000.0, 3000, 0.4)])
    assert p["env_steps_per_s"] == pytest.approx(2000.0)
    assert p["cpu_ms_per_env_step"]["env"] == pytest.approx((0.2 * 1000 + 0.4 * 3000) / 4000)
    assert p["per_round"] == [1000.0, 3000.0]


def test_the_table_gives_rl_bk_over_the_peer_and_dashes_for_what_a_peer_cannot_split():
    ours = _run("rl-bk", 3000.0, 3000, 0.2)
    peer = _run("CleanRL", 4000.0, 4000, 0.2)
    peer["cpu_ms_per_env_step"]["policy forward"] = math.nan
    meta = {"command": "python -m bench.peer_throughput", "date": "d", "machine": "m", "rounds": 1}
    results = {
        "babyai-mlp64": {
            "pooled": {"rl-bk": pt.pooled([ours]), "cleanrl": pt.pooled([peer])},
            "meta": meta,
        }
    }
    rows = [line for line in pt.report(results) if line.startswith("| babyai-mlp64")]
    assert len(rows) == 2
    peer_cells = [c.strip() for c in rows[1].split("|")]
    assert peer_cells[5] == "0.75"  # 3,000 / 4,000
    assert "–" in peer_cells  # the forward pass CleanRL does not time apart


def test_nethack_variants_cross_layouts_with_rl_bks_requests_in_flight_and_passes():
    variants = pt.nethack_variants("task,1x16", "task,2")
    runners16 = {"num_env_runners": 1, "num_envs_per_env_runner": 16}
    assert variants == {
        "nethack": {},
        "nethack-in-flight2": {"env_runners": {"max_requests_in_flight_per_env_runner": 2}},
        "nethack-1x16": {"env_runners": runners16},
        "nethack-1x16-in-flight2": {
            "env_runners": {**runners16, "max_requests_in_flight_per_env_runner": 2}
        },
    }
    assert pt.nethack_variants("task", "task", "1") == {
        "nethack-passes1": {"appo": {"circular_buffer_iterations_per_batch": 1}}
    }


def test_each_run_with_a_raw_rate_gives_both_trainers_against_it_and_names_its_commit():
    meta = {"command": "python -m bench.peer_throughput", "date": "d", "machine": "m", "rounds": 1}
    run = {
        "pooled": {
            "rl-bk": pt.pooled([_run("rl-bk", 5000.0, 5000, 0.1)]),
            "sample-factory": pt.pooled([_run("sample-factory 2.1.1", 4000.0, 4000, 0.2)]),
        },
        "raw": {"steps_per_s_captioned": 20000.0},
        "meta": {**meta, "commit": "abc1234", "cpu": "Some CPU"},
    }
    lines = pt.report({"nethack": run})
    assert (
        "- nethack: 20000 steps/s (measured once, before the trainers); rl-bk's APPO at "
        "0.25 x raw, sample-factory at 0.20 x"
    ) in lines
    run["raw"] = {"steps_per_s_captioned": 20000.0, "per_round": [19000.0, 21000.0]}
    assert any("(the median of its rounds' 19000, 21000)" in line for line in pt.report({"n": run}))
    assert any(line.endswith("(d; commit abc1234, cpu Some CPU): nethack") for line in lines)


def test_samples_trained_per_env_step_pool_by_steps_and_are_listed_per_run():
    # 1,000 steps trained twice each and 3,000 trained once: 5,000 samples over 4,000 steps.
    runs = [_run("rl-bk", 1000.0, 1000, 0.2), _run("rl-bk", 3000.0, 3000, 0.2)]
    runs[0]["samples_trained_per_env_step"], runs[1]["samples_trained_per_env_step"] = 2.0, 1.0
    ours = pt.pooled(runs)
    assert ours["samples_trained_per_env_step"] == pytest.approx(1.25)
    assert "samples_trained_per_env_step" not in pt.pooled([_run("sample-factory", 1.0, 1, 0.1)])
    meta = {"command": "c", "date": "d", "machine": "m", "rounds": 2}
    peer = pt.pooled([_run("sample-factory 2.1.1", 4000.0, 4000, 0.2)])
    lines = pt.report({"nethack": {"pooled": {"rl-bk": ours, "sf": peer}, "meta": meta}})
    assert "- nethack: 1.25" in lines
