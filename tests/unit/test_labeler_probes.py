"""The labeller probes' measures, checked by hand, and their runner on hand-made items: a
labeller's agreement is the share of items where its answer is the oracle's."""

import pytest

from rl_bk.experiments.labeler_probes import agreement, run_closed, wilson
from rl_bk.labeling.backends.oracle import OracleBackend
from rl_bk.labeling.tasks import HelpfulRequest

TASK = "make progress in the game"


def test_agreement_counts_matches_and_the_most_frequent_answer():
    got = agreement(["A", "B", "A", "A"], ["A", "A", "A", "B"])
    assert got["n"] == 4 and got["agreement"] == 0.5  # items 1 and 3 match
    assert got["majority_rate"] == 0.75 and got["answers"] == {"A": 3, "B": 1}
    assert got["ci95"] == wilson(2, 4)


def test_wilson_interval_by_hand():
    # 8 of 10: p = 0.8, z = 1.96; centre (8 + z²/2) / (10 + z²) = 0.7167,
    # half-width z * sqrt(10 * 0.8 * 0.2 + z²/4) / (10 + z²) = 0.2266
    assert wilson(8, 10) == pytest.approx([0.490, 0.943], abs=1e-3)


def test_the_oracle_agrees_with_its_own_answers_and_disagrees_with_their_opposite():
    oracle = OracleBackend()
    requests = [
        HelpfulRequest(caption=c, task=TASK, env="nethack")
        for c in ("You kill the newt!", "It's a wall.", "You find a hidden passage.")
    ]
    truth = [lab.helpful for lab in oracle.label("helpful", requests)]
    items = list(zip(requests, truth))
    assert run_closed("helpful", items, oracle, text_items=0)["rules"]["agreement"] == 1.0
    flipped = [(r, not t) for r, t in items]
    assert run_closed("helpful", flipped, oracle, text_items=0)["rules"]["agreement"] == 0.0
