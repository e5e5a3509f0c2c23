"""BK-Code's writer loop (feedback, fallbacks, files), the env descriptions it sends, and the
written code as a PotentialSource."""

from __future__ import annotations

import json
import logging
import pickle
import time

import numpy as np
import pytest

from env_registry.babyai.oracle import parse_mission
from rl_bk.knowledge.trajectory import Chunk, windows
from rl_bk.labeling.backends.base import BackendError
from rl_bk.labeling.backends.oracle import infer_env
from rl_bk.labeling.tasks import MAX_TEXT, RewardCodeLabel, RewardCodeRequest
from rl_bk.methods.bk.code.descriptions import SIGNATURE, describe_env, window_records
from rl_bk.methods.bk.code.potential import CodePotential
from rl_bk.methods.bk.code.sandbox import Sandbox
from rl_bk.methods.bk.code.writer import FALLBACK_CODE, write_potential_code

MISSION = "go to the red ball"
BROKEN = f"{SIGNATURE}:\n    return window[-1]['text'] * 1.0\n"
GOOD = f"{SIGNATURE}:\n    return 0.1 * len(window[-1]['caption'])\n"


def chunk(captions: list[str], actions: list[int] | None = None, eid: str = "e") -> Chunk:
    n = len(captions) - 1
    return Chunk(
        np.zeros((n + 1, 2), np.float32),
        captions,
        np.asarray(actions if actions is not None else [2] * n),
        mission=MISSION,
        episode_id=eid,
    )


def toward_red_ball(eid: str = "a") -> Chunk:
    """The agent walks up to a red ball: 6 steps away, then 5, ..., then 1."""
    caps = ["You see a wall 4 steps forward. You see a grey box 2 steps right."]
    caps += [f"You see a red ball 1 step left and {k} steps forward." for k in (5, 4, 3, 2)]
    caps += ["You see a red ball 1 step left.", "You see a red ball 1 step forward."]
    return chunk(caps, [1, 2, 2, 2, 2, 0], eid)


def wandering(eid: str = "b") -> Chunk:
    caps = [
        "You see a wall 2 steps left.",
        "You see a wall 1 step forward.",
        "You see nothing in front.",
        "You see a blue key 3 steps forward.",
        "You see a wall 1 step forward.",
        "You see a wall 2 steps right.",
    ]
    return chunk(caps, [0, 1, 2, 0, 1], eid)


class ScriptedLabeler:
    """Answers reward_code requests with pre-set codes, in order, and keeps the requests."""

    identity = "scripted/test"
    is_oracle = False

    def __init__(self, *codes: str | Exception):
        self.codes = list(codes)
        self.requests: list[RewardCodeRequest] = []

    def __call__(self, task, requests):
        assert task == "reward_code" and len(requests) == 1
        self.requests.append(requests[0])
        answer = self.codes.pop(0) if len(self.codes) > 1 else self.codes[0]
        if isinstance(answer, Exception):
            raise answer
        return [RewardCodeLabel(code=answer)]


# ------------------------------------------------------------------------------ descriptions
def test_the_description_states_the_mission_when_given_and_the_contract_always():
    text = describe_env("babyai", "go to the red ball.")
    assert text.endswith("The agent's mission: go to the red ball.")
    assert SIGNATURE in text and '"action": str | None' in text
    assert "You see a red ball 1 step right and 4 steps forward" in text  # the real format
    assert "pick up the front object" in text  # the action names of the window
    assert len(text) <= MAX_TEXT
    # Rule readers (the oracle) find exactly the mission in it, and the right game.
    assert [t.goal for t in parse_mission(text)] == ["go to the red ball"]
    assert infer_env(text) == "babyai"
    withheld = describe_env("babyai", None)
    assert "mission:" not in withheld and parse_mission(withheld) == []
    for style in ("smartplay", "ellm"):
        crafter = describe_env("crafter", "collect coal", caption_style=style)
        assert len(crafter) <= MAX_TEXT and infer_env(crafter) == "crafter"
        assert "make wood pickaxe" in crafter and crafter.endswith("collect coal.")
    with pytest.raises(ValueError, match="no description"):
        describe_env("minedojo")


def test_window_records_are_oldest_first_with_the_current_action_none():
    w = windows(chunk(["A.", "B.", "C."], [0, 2]), 5)[-1]
    assert window_records(w, "babyai") == [
        {"caption": "A.", "action": "turn left"},
        {"caption": "B.", "action": "go forward"},
        {"caption": "C.", "action": None},
    ]


# ------------------------------------------------------------------------------ writer loop
def test_a_failing_code_gets_its_traceback_back_and_the_good_one_is_kept(tmp_path):
    labeler = ScriptedLabeler(BROKEN, GOOD, BROKEN)
    result = write_potential_code(
        labeler,
        [toward_red_ball(), wandering()],
        tmp_path,
        family="babyai",
        mission=MISSION,
        rounds=3,
        segments_per_round=2,
        progress=False,
    )
    first, second, third = labeler.requests
    assert first.feedback == "" and first.env_description.endswith(f"mission: {MISSION}.")
    assert first.signature == SIGNATURE
    # Round 2 quotes the broken code and its traceback, with the window it failed on.
    assert second.feedback.startswith("Round 2 of 3.")
    assert "window[-1]['text']" in second.feedback
    assert "KeyError: 'text'" in second.feedback
    assert "line 2, in compute_potential" in second.feedback
    assert "It failed on this window:" in second.feedback
    # Round 3 shows what the good code computed, state by state.
    assert "It ran." in third.feedback and "-> potential = " in third.feedback
    assert "Current observation:" in third.feedback
    assert len(third.feedback) <= MAX_TEXT

    cand = result.candidates[0]
    assert result.code == GOOD and not cand.failed and cand.final_round == 2
    assert (tmp_path / "code-final.py").read_text() == GOOD
    assert (tmp_path / "code-candidate-0.py").read_text() == GOOD
    history = json.loads((tmp_path / "history.json").read_text())
    assert [h["outcome"] for h in history] == ["code_error", "ran", "code_error"]
    assert history[1]["feedback"] == second.feedback and history[1]["code"] == GOOD
    assert len(history[1]["potentials"]) == 2  # one list per sampled segment
    meta = json.loads((tmp_path / "meta.json").read_text())
    assert meta["labeler"] == "scripted/test" and meta["is_oracle"] is False
    assert (meta["rounds"], meta["horizon"], meta["family"]) == (3, 5, "babyai")
    assert meta["mission"] == MISSION and meta["created_at"]


def test_a_candidate_whose_code_never_runs_falls_back_to_a_constant(tmp_path, caplog):
    labeler = ScriptedLabeler(BROKEN, BackendError("the model rambled"), "def other():\n  pass\n")
    with caplog.at_level(logging.WARNING):
        result = write_potential_code(
            labeler,
            [toward_red_ball()],
            tmp_path,
            family="babyai",
            rounds=3,
            segments_per_round=1,
            progress=False,
        )
    assert result.failed and result.code == FALLBACK_CODE
    assert "falls back to a constant potential" in caplog.text
    history = json.loads((tmp_path / "history.json").read_text())
    assert [h["outcome"] for h in history] == ["code_error", "labeler_error", "definition_error"]
    assert "could not be used: the model rambled" in labeler.requests[2].feedback
    assert "mission:" not in labeler.requests[0].env_description  # withheld: BK's setting
    assert CodePotential.from_dir(tmp_path)([toward_red_ball()])[0].tolist() == [0.0] * 7


def test_candidates_send_distinct_requests_and_each_is_saved(tmp_path):
    labeler = ScriptedLabeler(GOOD)
    result = write_potential_code(
        labeler,
        [toward_red_ball(), wandering()],
        tmp_path,
        family="babyai",
        rounds=1,
        candidates=2,
        progress=False,
    )
    assert [r.feedback for r in labeler.requests] == [
        "Candidate 1 of 2: write your own approach.",
        "Candidate 2 of 2: write your own approach.",
    ]
    assert len({r.model_dump_json() for r in labeler.requests}) == 2  # no store replay
    assert result.best_candidate == 0
    assert (tmp_path / "code-candidate-1.py").read_text() == GOOD


def test_the_oracle_writes_code_that_rises_toward_the_red_ball(tmp_path):
    from rl_bk.labeling.config import LabelerConfig
    from rl_bk.labeling.labeler import LocalLabeler

    labeler = LocalLabeler(LabelerConfig(backend="oracle", store_path=str(tmp_path / "labels.db")))
    episodes = [toward_red_ball("a"), wandering("b"), toward_red_ball("c")]
    result = write_potential_code(
        labeler,
        episodes,
        tmp_path / "code",
        family="babyai",
        mission=MISSION,
        rounds=2,
        progress=False,
    )
    assert not result.failed
    meta = json.loads((tmp_path / "code" / "meta.json").read_text())
    assert meta["is_oracle"] is True and meta["labeler"].startswith("oracle/")
    potential = CodePotential.from_dir(tmp_path / "code")
    near, far = potential([toward_red_ball(), wandering()])
    assert np.all(np.diff(near[:-1]) > 0)  # every step closer raises it
    assert near[-1] == near[-2]  # "1 step left", then "1 step forward": as near
    assert near[-1] > far.max()
    assert potential.metrics()["code_errors"] == 0.0


# ------------------------------------------------------------------------------ potential
def test_code_potential_gives_one_value_per_state_in_one_call():
    code = f"{SIGNATURE}:\n    return float(len(window)) + (window[-1]['action'] is None)\n"
    potential = CodePotential(code, family="babyai", horizon=3)
    a, b = potential([toward_red_ball(), chunk(["X.", "X.", "X."])])
    assert a.tolist() == [2.0, 3.0, 4.0, 4.0, 4.0, 4.0, 4.0]  # window length, capped at 3
    assert b.tolist() == [2.0, 3.0, 4.0]
    m = potential.metrics()
    assert m["code_calls"] == 1.0 and m["code_errors"] == 0.0
    assert m["code_unique_window_fraction"] == 1.0
    same = [chunk(["X."] * 4, eid=str(i)) for i in range(5)]
    potential(same)  # 20 windows, 3 distinct (the last two of each chunk are alike)
    assert potential.unique_windows == 10 + 3 and potential.windows == 10 + 20
    potential.close()


def test_windows_alike_but_for_their_actions_are_scored_apart():
    code = f"{SIGNATURE}:\n    return float(window[0]['action'] == 'go forward')\n"
    potential = CodePotential(code, family="babyai", horizon=2)
    forward, left = potential([chunk(["X.", "X."], [2], "f"), chunk(["X.", "X."], [0], "l")])
    assert forward.tolist() == [0.0, 1.0] and left.tolist() == [0.0, 0.0]
    potential.close()


def test_code_potential_survives_failures_at_rl_time(caplog, monkeypatch):
    sneaky = f"{SIGNATURE}:\n    open('/tmp/bk-code-was-here', 'w')\n    return 1.0\n"
    potential = CodePotential(sneaky, family="babyai", time_limit_s=2.0)
    with caplog.at_level(logging.WARNING):
        values = potential([toward_red_ball(), wandering()])
    assert [v.tolist() for v in values] == [[0.0] * 7, [0.0] * 6]
    assert potential.errors == 1 and "SandboxRefusal" in potential.last_error
    assert potential.metrics()["code_errors"] == 1.0 and "using zeros" in caplog.text
    potential([wandering()])
    assert potential.errors == 2
    potential.close()

    # A failure of one batch (here: raising on one caption) leaves the next batch its values.
    picky = f"{SIGNATURE}:\n    assert 'key' not in window[-1]['caption']\n    return 1.0\n"
    potential = CodePotential(picky, family="babyai")
    assert potential([wandering()])[0].tolist() == [0.0] * 6 and potential.errors == 1
    assert potential([toward_red_ball()])[0].tolist() == [1.0] * 7 and potential.errors == 1
    potential.close()

    # Code that cannot define the function is loaded once: a new sandbox per batch would cost
    # a process start on every train batch of the trial.
    loads = []
    load = Sandbox.load

    def counted_load(sandbox, *args, **kwargs):
        loads.append(args)
        return load(sandbox, *args, **kwargs)

    monkeypatch.setattr(Sandbox, "load", counted_load)
    broken = CodePotential("def nothing():\n    pass\n", family="babyai")
    broken([wandering()])
    broken([wandering()])
    assert broken.errors == 2 and "no function named" in broken.last_error
    assert len(loads) == 1


def test_code_potential_pickles_without_its_sandbox():
    potential = CodePotential(GOOD, family="babyai")
    before = potential([wandering()])
    copy = pickle.loads(pickle.dumps(potential))
    assert copy._sandbox is None and potential._sandbox is not None
    assert np.allclose(copy([wandering()])[0], before[0])
    potential.close()
    copy.close()


def test_a_train_batch_of_2048_windows_takes_one_quick_call(tmp_path):
    """The hot path: the oracle's code on one batch's windows (printed: run with -s)."""
    from rl_bk.labeling.config import LabelerConfig
    from rl_bk.labeling.labeler import LocalLabeler

    labeler = LocalLabeler(LabelerConfig(backend="oracle", store_path=str(tmp_path / "labels.db")))
    write_potential_code(
        labeler,
        [toward_red_ball(), wandering()],
        tmp_path / "code",
        family="babyai",
        mission=MISSION,
        rounds=1,
        progress=False,
    )
    rng = np.random.default_rng(0)
    colors, kinds = ("red", "green", "blue", "grey"), ("ball", "box", "key")

    def caption() -> str:
        things = [
            f"You see a {rng.choice(colors)} {rng.choice(kinds)} {rng.integers(1, 4)} steps "
            f"left and {rng.integers(1, 7)} steps forward"
            for _ in range(rng.integers(1, 5))
        ]
        return f"You see a wall {rng.integers(1, 7)} steps forward. " + ". ".join(things) + "."

    chunks = [
        chunk([caption() for _ in range(64)], list(rng.integers(0, 3, 63)), str(i))
        for i in range(32)
    ]
    potential = CodePotential.from_dir(tmp_path / "code")
    potential(chunks[:1])  # starts the worker
    started = time.perf_counter()
    values = potential(chunks)
    seconds = time.perf_counter() - started
    print(f"\nbk-code oracle potential: {sum(len(v) for v in values)} windows in {seconds:.3f} s")
    assert sum(len(v) for v in values) == 2048 and potential.errors == 0
    assert seconds < 2.0  # about 0.05-0.1 s on 2 cores; generous for a loaded machine
    potential.close()
