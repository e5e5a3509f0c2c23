"""Closed answers from token scores: the answers' spellings, the both-orders combination that
cancels a position bias, the labels' probabilities, and the label store keeping labels asked
differently apart."""

from __future__ import annotations

import math

import pytest

from rl_bk.labeling.backends.fake import FakeGenerator
from rl_bk.labeling.backends.llm import LLMBackend
from rl_bk.labeling.closed_answers import (
    answers_from_top_logprobs,
    helpful_label,
    preference_label,
    surface_forms,
)
from rl_bk.labeling.service import LabelService
from rl_bk.labeling.store import LabelStore
from rl_bk.labeling.tasks import HelpfulRequest, PreferenceRequest

GOOD, BAD = "You see a red ball 1 step forward.", "You see a wall 2 steps forward."


def biased_judge(bias: float, signal: float = 1.0):
    """A fake model that knows which segment shows the ball (``signal`` nats) but adds
    ``bias`` nats to "A" whatever it is shown: a position bias larger than its knowledge."""

    def scores(messages, answers):
        text = messages[-1]["content"]
        shown_a = text.split("Segment A:")[1].split("Segment B:")[0]
        a_is_good = "red ball" in shown_a
        return {
            "A": bias + (signal if a_is_good else 0.0),
            "B": 0.0 if a_is_good else signal,
            "tie": -5.0,
        }

    return scores


def pair(good_first: bool) -> PreferenceRequest:
    a, b = ([GOOD], [BAD]) if good_first else ([BAD], [GOOD])
    return PreferenceRequest(segment_a=a, segment_b=b, criteria="go to the red ball", env="babyai")


def test_both_orders_cancel_a_position_bias_that_one_order_cannot():
    gen = FakeGenerator(answer_scores=biased_judge(bias=3.0, signal=1.0))
    one = LLMBackend(gen, "fake-llm", preference_orders=1)
    both = LLMBackend(gen, "fake-llm", preference_orders=2)
    requests = [pair(True), pair(False)]
    # One order: the bias wins, "A" both times (right once: chance).
    assert [lab.choice for lab in one.label("preference", requests)] == ["A", "A"]
    # Both orders: the good segment wins both times, with the probability its signal gives.
    labels = both.label("preference", requests)
    assert [lab.choice for lab in labels] == ["A", "B"]
    # By hand: segment A's score is the mean of its two letters' log-probs, and the bias
    # shifts both segments alike, so p_a = sigmoid(signal) = 1 / (1 + e^-1).
    assert labels[0].p_a == pytest.approx(1 / (1 + math.exp(-1.0)), abs=1e-5)
    assert labels[1].p_a == pytest.approx(1 - 1 / (1 + math.exp(-1.0)), abs=1e-5)
    # The second order swapped the segments.
    asked = [c["messages"][-1]["content"] for c in gen.calls][-2:]
    assert asked[0].index(GOOD) > asked[0].index("Segment B:")
    assert asked[1].index(GOOD) < asked[1].index("Segment B:")


def test_preference_label_by_hand():
    # One order: softmax over A, B, tie.
    lab = preference_label([{"A": math.log(0.6), "B": math.log(0.3), "tie": math.log(0.1)}])
    assert lab.choice == "A" and lab.p_a == pytest.approx(2 / 3, abs=1e-6)
    assert lab.p_tie == pytest.approx(0.1, abs=1e-6)
    # A tie wins when both orders put most mass there.
    lab = preference_label([{"A": -3.0, "B": -3.0, "tie": -0.1}] * 2)
    assert lab.choice == "tie" and lab.p_a == pytest.approx(0.5)
    with pytest.raises(ValueError, match="one or two orders"):
        preference_label([])


def test_helpful_label_threshold_and_probability():
    scores = {"yes": math.log(0.3), "no": math.log(0.5)}  # renormalised: P(yes) = 0.375
    assert helpful_label(scores) == helpful_label(scores, 0.5)
    lab = helpful_label(scores)
    assert lab.helpful is False and lab.p_yes == pytest.approx(0.375)
    assert helpful_label(scores, threshold=0.3).helpful is True


def test_answers_from_an_api_top_list_sum_their_spellings():
    assert set(surface_forms("yes")) >= {"yes", " yes", "Yes", " Yes", "YES"}
    top = {"Yes": math.log(0.5), " yes": math.log(0.2), "No": math.log(0.1), "Maybe": -0.5}
    got = answers_from_top_logprobs(top, ["yes", "no", "tie"])
    assert got["yes"] == pytest.approx(math.log(0.7))
    assert got["no"] == pytest.approx(math.log(0.1))
    assert got["tie"] == pytest.approx(min(top.values()))  # absent: the list's floor


def test_labels_asked_differently_are_stored_apart(tmp_path):
    gen = FakeGenerator(answer_scores=biased_judge(bias=3.0), responses=["B"])
    store = LabelStore(tmp_path / "labels.sqlite3")
    request = [pair(True)]
    text = LabelService(LLMBackend(gen, "fake-llm", answer_mode="text"), store)
    scores = LabelService(LLMBackend(gen, "fake-llm"), store)
    assert text.label("preference", request).labels[0].choice == "B"  # the scripted text
    got = scores.label("preference", request)
    assert got.from_store == [False]  # not served the text answer
    assert got.labels[0].choice == "A" and got.labels[0].p_a is not None
    assert scores.label("preference", request).from_store == [True]
    versions = {r[0] for r in store._conn().execute("SELECT template_version FROM labels")}
    assert versions == {"preference-v2", "preference-v2+scores-2"}


def test_helpful_from_token_scores_through_the_backend():
    def scores(messages, answers):
        shows_gold = "Observation: 5 gold" in messages[-1]["content"]
        return {"yes": 0.0 if shows_gold else -3.0, "no": -1.0}

    backend = LLMBackend(FakeGenerator(answer_scores=scores), "fake-llm")
    labels = backend.label(
        "helpful",
        [
            HelpfulRequest(caption="5 gold pieces.", task="score", env="nethack"),
            HelpfulRequest(caption="It's a wall.", task="score", env="nethack"),
        ],
    )
    assert [lab.helpful for lab in labels] == [True, False]
    assert labels[0].p_yes == pytest.approx(1 / (1 + math.exp(-1.0)), abs=1e-5)
