"""BK's knowledge beside the reference's (``rl-bk knowledge compare``), on hand-made artifacts:
agreement counts only the pairs both decided, goals are matched as normalised text."""

import json

from rl_bk.methods.bk.comparison import goal_lines, preference_lines


def test_preference_agreement_counts_the_pairs_both_decided(tmp_path):
    for b, best in (("llm", 1), ("oracle", 0)):
        (tmp_path / b).mkdir()
        report = {"heldout_accuracy": [0.5, 0.75], "best_epoch": best}
        (tmp_path / b / "report.json").write_text(json.dumps(report))
    choices = {"llm": ["A", "B", "A", "tie", None], "oracle": ["A", "A", "A", "B", "B"]}
    folders = {"llm": tmp_path / "llm", "oracle": tmp_path / "oracle", "other": None}
    lines = preference_lines(folders, "oracle", choices)
    assert "other: not built." in lines
    # pairs decided by both: the first three; the llm agrees on two of them
    assert "| llm | 4 | 2 / 1 / 1 | 0.667 (2/3) | 0.750 |" in lines
    assert "| oracle | 5 | 3 / 2 / 0 | – | 0.500 |" in lines


def test_goals_shared_with_the_reference_are_matched_as_normalised_text(tmp_path):
    lists = {
        "llm": ["Go to the red ball.", "open the door", "dance"],
        "oracle": ["go to the red ball", "open the door"],
    }
    for b, goals in lists.items():
        (tmp_path / b).mkdir()
        (tmp_path / b / "goals.json").write_text(json.dumps({"goals": goals}))
    lines = goal_lines({b: tmp_path / b for b in lists}, "oracle")
    assert "llm: 3 goals; 2 of them also in oracle's list:" in lines
    assert "oracle: 2 goals:" in lines
