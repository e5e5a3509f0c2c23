"""Prompt templates, GBNF grammars and answer parsers of the LLM labeler (no LLM, no Ray)."""

from __future__ import annotations

import pytest

from rl_bk.labeling import parsing, prompts
from rl_bk.labeling.backends.base import BackendError
from rl_bk.labeling.gbnf import Gbnf
from rl_bk.labeling.grammars import (
    ENV_VOCABULARY,
    HELPFUL_GRAMMAR,
    PREFERENCE_GRAMMAR,
    goals_grammar,
    normalize_goal,
    reward_code_grammar,
)
from rl_bk.labeling.parsing import ParseError, parse
from rl_bk.labeling.tasks import (
    TASKS,
    ActionScoresRequest,
    GoalsRequest,
    HelpfulRequest,
    PreferenceRequest,
    RewardCodeRequest,
)

SIG = "def compute_potential(window: list[dict]) -> float"


# ---------------------------------------------------------------------------------- prompts
def test_template_versions_equal_task_versions():
    assert set(prompts.TEMPLATES) == set(TASKS)
    for name, spec in TASKS.items():
        assert prompts.TEMPLATES[name].version == spec.template_version


def test_preference_prompt_has_both_segments_in_chat_and_text():
    req = PreferenceRequest(
        segment_a=["You see a red ball 2 steps forward."],
        segment_b=["You see a wall 1 step forward."],
        criteria="go to the red ball",
        env="babyai",
    )
    p = prompts.render("preference", req)
    assert [m["role"] for m in p.messages] == ["system", "user"]
    user = p.messages[1]["content"]
    for part in ("Segment A:", "Segment B:", "red ball 2 steps forward", "go to the red ball"):
        assert part in user and part in p.text
    assert p.text.endswith("Answer:")
    assert user.endswith("Answer with one letter, A or B, or with the word tie if they are equal.")


def test_long_segments_and_captions_are_clipped():
    long_caption = "You see a red ball 1 step forward. " * 50
    req = PreferenceRequest(
        segment_a=[f"step {i} {long_caption}" for i in range(20)],
        segment_b=["x"],
        criteria="c",
    )
    p = prompts.render("preference", req)
    assert "step 0 " not in p.text  # only the last SEGMENT_STEPS steps
    assert "20. step 19" in p.text
    assert len(p.text) < 2500


def test_goals_prompt_names_env_verbs_and_reward_code_prompt_the_signature():
    g = prompts.render("goals", GoalsRequest(caption="you see tree.", env="crafter", max_goals=2))
    assert "collect" in g.text and "JSON list" in g.text and "up to 2" in g.text
    r = prompts.render("reward_code", RewardCodeRequest(env_description="BabyAI", signature=SIG))
    assert SIG + ":" in r.messages[1]["content"]


def test_action_scores_prompt_and_continuations():
    prompt, conts = prompts.render_scoring(
        ActionScoresRequest(prompt="A tree is left.", actions=["move left", "sleep"])
    )
    assert prompt.endswith("Action:") and conts == [" move left", " sleep"]


# --------------------------------------------------------------------------------- grammars
@pytest.mark.parametrize(
    ("grammar", "good", "bad"),
    [
        (PREFERENCE_GRAMMAR, ["A", "B", "tie"], ["C", "a", "A B", "", "Tie"]),
        (HELPFUL_GRAMMAR, ["yes", "no"], ["Yes", "maybe", "yesno"]),
    ],
)
def test_small_grammars_accept_exactly_their_answers(grammar, good, bad):
    assert grammar.startswith("root ::=")
    g = Gbnf(grammar)
    assert all(g.matches(s) for s in good)
    assert not any(g.matches(s) for s in bad)


def test_babyai_goals_grammar():
    g = Gbnf(goals_grammar("babyai", 2))
    assert g.matches('["go to the red ball"]')
    assert g.matches('["pick up the purple key", "open the yellow door"]')
    assert g.matches('["put the box next to the grey door"]')
    assert not g.matches('["go to the red banana"]')  # object not in the env
    assert not g.matches('["fly to the red ball"]')  # verb not in the env
    assert not g.matches('["go to the red ball", "open the door", "go to the key"]')  # > 2
    assert not g.matches("[]")


def test_crafter_and_nethack_goals_grammars_and_free_grammar():
    crafter = Gbnf(goals_grammar("crafter", 3))
    assert crafter.matches('["collect wood", "place crafting table"]')
    assert not crafter.matches('["chop tree"]')  # the canonical vocabulary only
    nethack = Gbnf(goals_grammar("nethack", 3))
    assert nethack.matches('["descend the stairs"]')
    assert not nethack.matches('["collect wood"]')
    free = Gbnf(goals_grammar(None, 3))
    assert free.matches('["find a way out", "look around"]')
    assert not free.matches('["x" "y"]')


def test_every_vocabulary_goal_is_in_its_grammar_and_samples_are_valid():
    for env, vocab in ENV_VOCABULARY.items():
        g = Gbnf(goals_grammar(env, 1))
        for goal in sorted(vocab.goals)[:200]:
            assert g.matches(f'["{goal}"]'), (env, goal)
            assert normalize_goal(env, goal) == goal
        for seed in range(20):  # what the grammar generates, the parser accepts
            sample = Gbnf(goals_grammar(env, 3)).sample(seed)
            assert parse("goals", GoalsRequest(caption="c", env=env), sample).goals


def test_reward_code_grammar_forces_the_signature():
    g = Gbnf(reward_code_grammar(SIG))
    assert g.matches(SIG + ":\n    return 1.0\n")
    assert not g.matches("def other(window):\n    return 1.0\n")
    assert not g.matches("Here is the code:\n" + SIG + ":\n    return 1.0\n")


def test_vocabularies_agree_with_the_envs():
    pytest.importorskip("minigrid")
    from minigrid.core.constants import COLOR_NAMES, OBJECT_TO_IDX

    from env_registry.babyai import vocabulary as babyai
    from env_registry.crafter import env as crafter

    assert set(babyai.COLORS) == set(COLOR_NAMES)
    assert set(babyai.THINGS) <= set(OBJECT_TO_IDX)
    # every Crafter achievement but waking up has a goal that names it
    names = {a.replace("_", " ") for a in crafter.ACHIEVEMENTS}
    canon = {normalize_goal("crafter", m) for m in crafter.TASK_MISSIONS.values()}
    assert canon - {None} <= ENV_VOCABULARY["crafter"].goals
    assert len(canon - {None}) == len(names) - 1  # "wake up" is not a goal one can do


# ---------------------------------------------------------------------------------- parsing
@pytest.mark.parametrize(
    ("text", "choice"),
    [
        ("A", "A"),
        ("tie", "tie"),
        ("B. A red ball is closer in segment B.", "B"),
        ("a closer look: Segment B is better", "B"),
        ("[Thoughts] both move.\n[Rank] B > A", "B"),
        ("I rank A = B", "tie"),
        ("The answer is: A", "A"),
        ("They are equally good.", "tie"),
    ],
)
def test_parse_preference(text, choice):
    assert parsing.parse_preference(text).choice == choice


@pytest.mark.parametrize(
    ("text", "helpful"), [("yes", True), ("No.", False), ("I think yes, it helps", True)]
)
def test_parse_helpful(text, helpful):
    assert parsing.parse_helpful(text).helpful is helpful


def test_parse_goals_json_in_prose_validated_and_canonicalised():
    text = 'Sure! Here are goals: ["Chop tree.", "fly away", "place table", "chop tree"] Enjoy'
    label = parse("goals", GoalsRequest(caption="c", env="crafter", max_goals=3), text)
    assert label.goals == ["collect wood", "place crafting table"]  # invalid dropped, deduped


def test_parse_goals_numbered_and_bulleted_lists_and_max_goals():
    text = (
        "Goals:\n1. Go to a red ball.\n2) open blue door\n- go to the green banana\n* pick up key"
    )
    label = parse("goals", GoalsRequest(caption="c", env="babyai", max_goals=2), text)
    assert label.goals == ["go to the red ball", "open the blue door"]
    free = parse("goals", GoalsRequest(caption="c"), "- Explore the cave\n- Find food")
    assert free.goals == ["explore the cave", "find food"]


def test_parse_goals_failures():
    req = GoalsRequest(caption="c", env="babyai")
    with pytest.raises(ParseError):
        parse("goals", req, "I would explore the room")
    with pytest.raises(ParseError, match="vocabulary"):
        parse("goals", req, '["dance", "sing"]')
    assert parse("goals", req, "[]").goals == []


def test_parse_reward_code_fences_prose_and_truncation():
    req = RewardCodeRequest(env_description="d", signature=SIG)
    fenced = f"Here you go:\n```python\nimport math\n{SIG}:\n    return math.pi\n```\nDone."
    code = parse("reward_code", req, fenced).code
    assert code.startswith("import math\n" + SIG) and "Done" not in code
    compile(code, "x", "exec")
    prose = f"Sure.\n{SIG}:\n    return 1.0\n\nThis returns one for every window."
    code = parse("reward_code", req, prose).code
    assert code == f"{SIG}:\n    return 1.0"  # labels strip outer whitespace
    cut = f"{SIG}:\n    x = 1\n    return (x +"  # cut off by max_tokens
    assert parse("reward_code", req, cut).code == f"{SIG}:\n    x = 1"


def test_parse_reward_code_rejects_wrong_function_and_garbage():
    req = RewardCodeRequest(env_description="d", signature=SIG)
    with pytest.raises(ParseError, match="compute_potential"):
        parse("reward_code", req, "def other(x):\n    return 1\n")
    with pytest.raises(ParseError):
        parse("reward_code", req, f"{SIG}:\n    return ((((\n")


@pytest.mark.parametrize("task", ["preference", "helpful", "goals"])
def test_garbage_raises_parse_error_with_raw_text(task):
    req = {
        "preference": PreferenceRequest(segment_a=["a"], segment_b=["b"], criteria="c"),
        "helpful": HelpfulRequest(caption="c", task="t"),
        "goals": GoalsRequest(caption="c"),
    }[task]
    raw = "zzz qqq " * 100
    with pytest.raises(ParseError) as info:
        parse(task, req, raw)
    assert isinstance(info.value, BackendError)
    assert "zzz qqq" in str(info.value) and "more chars" in str(info.value)
