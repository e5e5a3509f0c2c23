"""The oracle backend on hand-written captions, each checked by hand (no LLM, no Ray)."""

from __future__ import annotations

import pytest

from rl_bk.labeling.backends.base import UnsupportedError
from rl_bk.labeling.backends.oracle import OracleBackend, infer_env
from rl_bk.labeling.tasks import (
    ActionScoresRequest,
    GoalsRequest,
    HelpfulRequest,
    PreferenceRequest,
    RewardCodeRequest,
)

ORACLE = OracleBackend()

# BabyAI captions in env_registry.babyai.captioner's format.
NEAR = "You see a wall 2 steps left. You see a red ball 1 step left and 1 step forward."
FAR = "You see a blue key 1 step forward. You see a red ball 2 steps right and 5 steps forward."
NONE = "You see a wall 1 step forward. You see a blue key 1 step right."
CARRY = "You see a wall 1 step forward. You carry a red ball."

# Crafter captions in both of env_registry.crafter.captioner's styles.
SP_WOOD = (
    "You see: tree 1 step to your north, grass 1 step to your west. You face tree to your north. "
    "Health 9/9, food 9/9, drink 9/9, energy 9/9. You have 2 wood."
)
SP_TABLE = (
    "You see: table 1 step to your east, stone 2 steps to your south. You face table to your "
    "east. Health 9/9, food 9/9, drink 9/9, energy 9/9. You have 3 wood."
)
SP_EMPTY = (
    "You see: grass 1 step to your north. You face grass to your north. "
    "Health 9/9, food 9/9, drink 9/9, energy 9/9. You have nothing in your inventory."
)
SP_PICKAXE = (
    "You see: stone 1 step to your north. You face stone to your north. "
    "Health 9/9, food 9/9, drink 9/9, energy 9/9. You have 1 wood, 1 wood pickaxe."
)
ELLM_WOOD = (
    "you see grass, sand, and tree. you are targeting tree. you have in your inventory wood."
)

STATUS = "HP 14/14, dungeon level 1, gold 0, XL 1, AC 4, not hungry, turn 10."


def one(task, request):
    return ORACLE.label(task, [request])[0]


def test_identity():
    assert (ORACLE.name, ORACLE.model, ORACLE.is_oracle) == ("oracle", "rules-v2", True)


# ---------------------------------------------------------------------------------- BabyAI
@pytest.mark.parametrize(
    ("a", "b", "choice"),
    [
        ([FAR], [NONE, NEAR], "B"),  # 2 steps beats 7 steps
        ([NEAR], [FAR], "A"),
        ([FAR], [NONE], "A"),  # visible beats not visible
        ([NONE], [FAR], "B"),
        ([NONE], [NONE], "tie"),
        ([NEAR], [NEAR], "tie"),
        ([NEAR], [CARRY], "B"),  # carrying the target is as near as it gets
    ],
)
def test_babyai_preference_picks_the_nearer_target(a, b, choice):
    req = PreferenceRequest(segment_a=a, segment_b=b, criteria="go to the red ball", env="babyai")
    assert one("preference", req).choice == choice


def test_babyai_preference_infers_env_and_follows_the_mission_when_told():
    req = PreferenceRequest(segment_a=[FAR], segment_b=[NEAR], criteria="go to the red ball")
    assert one("preference", req).choice == "B"  # env=None: inferred from the captions


def test_babyai_preference_without_a_mission_uses_background_knowledge_only():
    # BK's setting: no target known. FAR ends facing a blue key (an object right in front);
    # NEAR ends 2 steps from the nearest object: FAR is better, whatever the red ball's place.
    vague = PreferenceRequest(segment_a=[FAR], segment_b=[NEAR], criteria="do well", env="babyai")
    assert one("preference", vague).choice == "A"
    # A wasted action (going forward into the wall in front) costs more than 1 step of
    # distance: the same end, with a blocked move, loses.
    blocked = [f"{NONE} You choose the action: go forward.", NEAR]
    turned = [f"{NONE} You choose the action: turn left.", NEAR]
    req = PreferenceRequest(segment_a=blocked, segment_b=turned, criteria="do well", env="babyai")
    assert one("preference", req).choice == "B"
    empty = "You see a wall 3 steps forward."
    same = PreferenceRequest(segment_a=[empty], segment_b=[empty], criteria="x", env="babyai")
    assert one("preference", same).choice == "tie"


def test_babyai_code_without_a_mission_is_the_task_agnostic_potential():
    from env_registry.babyai.oracle import task_agnostic_potential
    from rl_bk.methods.bk.code.descriptions import SIGNATURE, describe_env

    code = one(
        "reward_code",
        RewardCodeRequest(env_description=describe_env("babyai"), signature=SIGNATURE),
    ).code
    assert "red" not in code and "task-agnostic" in code
    namespace: dict = {}
    exec(code, namespace)
    potential = namespace["compute_potential"]
    windows = [
        [{"caption": FAR, "action": None}],  # an object right in front: 1
        [{"caption": NEAR, "action": None}],  # nearest object 2 steps away: 0.9
        [{"caption": "You see a wall 2 steps forward", "action": None}],  # nothing: 0
        [{"caption": NONE, "action": "go forward"}, {"caption": NONE, "action": None}],
        [
            {"caption": CARRY, "action": "pick up the front object"},
            {"caption": CARRY, "action": None},
        ],  # already carrying: wasted
    ]
    values = [potential(w) for w in windows]
    assert values == pytest.approx([1.0, 0.9, 0.0, 1.0 - 0.5, -0.5])
    assert values == [task_agnostic_potential(w) for w in windows]  # one rule set


KEY_AHEAD = "You see a blue key 1 step forward."
KEY_ASIDE = "You see a blue key 1 step left and 1 step forward."


@pytest.mark.parametrize(
    ("caption", "action", "wasted"),
    [
        (KEY_ASIDE, "go forward", False),  # the key is not in front: the move goes ahead
        (KEY_AHEAD, "go forward", True),  # blocked by the key
        ("You see an open red door 1 step forward.", "go forward", False),
        ("You see a locked red door 1 step forward.", "go forward", True),
        ("You see a closed red door 1 step forward.", "go forward", True),
        (KEY_AHEAD, "pick up the front object", False),
        ("You see a closed red door 1 step forward.", "pick up the front object", True),
        (f"{KEY_AHEAD} You carry a red ball.", "pick up the front object", True),
        ("You see a wall 2 steps forward. You carry a red ball.", "drop the carried object", False),
        (f"{KEY_AHEAD} You carry a red ball.", "drop the carried object", True),  # cell taken
        ("You see a wall 2 steps forward.", "drop the carried object", True),  # nothing carried
        ("You see a grey box 1 step forward.", "toggle the front object", False),  # opens it
        ("You see a closed red door 1 step forward.", "toggle the front object", False),
        (KEY_AHEAD, "toggle the front object", True),
        (KEY_AHEAD, "done", True),
        (KEY_AHEAD, "turn left", False),
    ],
)
def test_task_agnostic_wasted_actions_by_hand(caption, action, wasted):
    """Each rule of a wasted action, one case apiece: the window's current state shows nothing,
    so its potential is 0, minus 0.5 when the previous action was wasted."""
    from env_registry.babyai.oracle import task_agnostic_potential

    window = [
        {"caption": caption, "action": action},
        {"caption": "You see a wall 2 steps forward.", "action": None},
    ]
    assert task_agnostic_potential(window) == (-0.5 if wasted else 0.0)


def test_task_agnostic_closeness_stays_above_zero_while_something_is_in_view():
    from env_registry.babyai.oracle import task_agnostic_potential

    far = "You see a red ball 3 steps left and 9 steps forward."  # 12 steps: 1 - 1.1 < 0.1
    assert task_agnostic_potential([{"caption": far, "action": None}]) == pytest.approx(0.1)


def test_babyai_helpful_needs_the_target_colour_and_type():
    assert one("helpful", HelpfulRequest(caption=NEAR, task="go to the red ball")).helpful
    assert not one("helpful", HelpfulRequest(caption=NEAR, task="go to the blue ball")).helpful
    assert one("helpful", HelpfulRequest(caption=FAR, task="pick up the key")).helpful
    assert one("helpful", HelpfulRequest(caption=CARRY, task="pick up the red ball")).helpful


def test_babyai_goals_are_the_mission_subgoals_in_order():
    req = GoalsRequest(
        caption=NEAR, mission="go to the blue box after you go to the red ball", env="babyai"
    )
    assert one("goals", req).goals == ["go to the red ball", "go to the blue box"]
    then = GoalsRequest(caption=NEAR, mission="pick up a purple key, then open the grey door")
    assert one("goals", then).goals == ["pick up the purple key", "open the grey door"]
    free = GoalsRequest(caption=FAR, env="babyai", max_goals=1)  # no mission: nearest object
    assert one("goals", free).goals == ["go to the blue key"]


# --------------------------------------------------------------------------------- Crafter
def test_crafter_suggests_placing_a_table_with_wood_and_no_table():
    goals = one("goals", GoalsRequest(caption=SP_WOOD, env="crafter", max_goals=10)).goals
    assert "place crafting table" in goals and "collect wood" in goals
    assert not any(g.startswith("make") for g in goals)  # no table in view
    ellm = one("goals", GoalsRequest(caption=ELLM_WOOD, max_goals=10)).goals  # env inferred
    assert "place crafting table" in ellm


def test_crafter_follows_the_recipes():
    one_wood = SP_WOOD.replace("2 wood", "1 wood")
    assert (
        "place crafting table"
        not in one("goals", GoalsRequest(caption=one_wood, env="crafter", max_goals=10)).goals
    )  # a table takes 2 wood
    at_table = one("goals", GoalsRequest(caption=SP_TABLE, env="crafter", max_goals=10)).goals
    assert {"make wood pickaxe", "make wood sword"} <= set(at_table)
    assert "place crafting table" not in at_table and "collect stone" not in at_table
    mine = one("goals", GoalsRequest(caption=SP_PICKAXE, env="crafter", max_goals=10)).goals
    assert "collect stone" in mine and "make wood pickaxe" not in mine  # already held


def test_crafter_urgent_needs_come_first():
    thirsty = SP_WOOD.replace("drink 9/9", "drink 2/9").replace("grass 1 step", "water 1 step")
    assert one("goals", GoalsRequest(caption=thirsty, env="crafter", max_goals=1)).goals == [
        "drink water"
    ]


def test_crafter_helpful_is_progress_toward_the_task():
    def helpful(caption, task):
        return one("helpful", HelpfulRequest(caption=caption, task=task, env="crafter")).helpful

    assert helpful(SP_WOOD, "make a wood pickaxe")  # a table can be placed now
    assert helpful(SP_PICKAXE, "make a wood pickaxe")  # already made
    assert helpful(SP_PICKAXE, "collect stone")
    assert not helpful(SP_EMPTY, "collect diamond")
    assert not helpful(SP_EMPTY, "collect wood")


def test_crafter_preference_prefers_the_later_tech_stage():
    req = PreferenceRequest(segment_a=[SP_WOOD], segment_b=[SP_PICKAXE], criteria="progress")
    assert one("preference", req).choice == "B"
    req = PreferenceRequest(segment_a=[SP_WOOD], segment_b=[SP_EMPTY], criteria="progress")
    assert one("preference", req).choice == "A"
    same = PreferenceRequest(segment_a=[SP_EMPTY], segment_b=[SP_EMPTY], criteria="progress")
    assert one("preference", same).choice == "tie"
    dead = "You died. " + SP_PICKAXE
    req = PreferenceRequest(segment_a=[dead], segment_b=[SP_EMPTY], criteria="p", env="crafter")
    assert one("preference", req).choice == "B"


# --------------------------------------------------------------------------------- NetHack
def test_nethack_helpful_by_message_keywords_not_status():
    def helpful(message):
        caption = f"{message} {STATUS}" if message else STATUS
        return one("helpful", HelpfulRequest(caption=caption, task="score", env="nethack")).helpful

    assert helpful("You kill the newt!")
    assert helpful("There is a staircase down here.")
    assert helpful("12 gold pieces.")
    assert not helpful("It's a wall.")
    assert not helpful("You can't move diagonally out of an intact doorway.")
    assert not helpful("")  # the status line says "gold 0": no message, no credit


def test_nethack_preference_and_goals():
    kill, wall = f"You kill the newt! {STATUS}", f"It's a wall. {STATUS}"
    req = PreferenceRequest(segment_a=[wall], segment_b=[kill], criteria="score")
    assert one("preference", req).choice == "B"  # env inferred from the status line
    deeper = STATUS.replace("dungeon level 1", "dungeon level 2")
    req = PreferenceRequest(segment_a=[STATUS, deeper], segment_b=[STATUS], criteria="s")
    assert one("preference", req).choice == "A"
    goals = one("goals", GoalsRequest(caption=f"There is a staircase down here. {STATUS}")).goals
    assert goals[0] == "descend the stairs"
    assert "pray" in one("goals", GoalsRequest(caption=STATUS.replace("HP 14/14", "HP 2/14"))).goals


# ------------------------------------------------------------------------ unknown, code, misc
def test_unknown_env_gets_neutral_answers():
    assert infer_env("The weather is nice.") is None
    assert one("goals", GoalsRequest(caption="The weather is nice.")).goals == []
    pref = PreferenceRequest(segment_a=["x"], segment_b=["y"], criteria="anything")
    assert one("preference", pref).choice == "tie"
    assert not one("helpful", HelpfulRequest(caption="x", task="y")).helpful


def test_reward_code_babyai_goto_is_a_working_potential():
    req = RewardCodeRequest(
        env_description="BabyAI. Mission: go to the red ball.",
        signature="def compute_potential(window: list[dict]) -> float",
    )
    code = one("reward_code", req).code
    assert "oracle" in code and "not by an LLM" in code
    ns: dict = {}
    exec(compile(code, "oracle", "exec"), ns)
    phi = ns["compute_potential"]
    near, far, none = phi([{"caption": NEAR}]), phi([{"caption": FAR}]), phi([{"caption": NONE}])
    assert near > far > none == 0.0
    assert phi([{"caption": CARRY}]) == 1.0
    assert phi([{"caption": NONE}, {"caption": NEAR}]) == near  # the latest step counts


def test_reward_code_generic_and_tuple_return():
    req = RewardCodeRequest(
        env_description="Crafter, a survival game.",
        signature="def compute_reward(obs, past_obs, past_actions) -> tuple[float, dict]",
    )
    ns: dict = {}
    exec(compile(one("reward_code", req).code, "oracle", "exec"), ns)
    value, details = ns["compute_reward"](SP_PICKAXE, [], [])
    assert isinstance(value, float) and value > 0 and details == {}


def test_action_scores_and_free_text_are_unsupported():
    with pytest.raises(UnsupportedError):
        ORACLE.label("action_scores", [ActionScoresRequest(prompt="p", actions=["a"])])
    with pytest.raises(UnsupportedError):
        ORACLE.complete("hello")
