"""The reference check's training-side report: an interval only where both sides have seeds."""

from bench import bk_training_stats as stats


def part(impl: str, potential: str, seed: int, value: float) -> dict:
    windows = [value, value + 0.1, value + 0.2]
    return {
        "implementation": impl,
        "potential": potential,
        "seed": seed,
        "windows": {m: windows for m in stats.MEASURES},
    }


def test_a_side_with_one_seed_gets_its_table_and_no_interval():
    parts = {f"bk/zero/{s}": part("bk", "zero", s, 0.1 * s) for s in range(3)}
    parts |= {"rl-bk/zero/0": part("rl-bk", "zero", 0, 0.2)}  # its other seeds still running
    parts |= {
        f"{i}/oracle/{s}": part(i, "oracle", s, 0.1 * s + (0.05 if i == "rl-bk" else 0))
        for i in ("bk", "rl-bk")
        for s in range(3)
    }
    text = "\n".join(stats.report(parts))
    zero = text.split("## zero potential")[1]
    oracle = text.split("## oracle potential")[1].split("## zero potential")[0]
    assert "| training return | rl-bk | 1 | 0.200 | 0.300 | 0.400 |" in zero
    assert "rl-bk minus BK: not yet (a side has under two seeds)." in zero
    assert "| training return | 0–100k | +0.050 |" in oracle  # both sides: the difference
