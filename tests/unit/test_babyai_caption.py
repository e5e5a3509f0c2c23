"""BabyAI-Text captions on hand-made views and on a real level, checked by hand."""

import numpy as np
import pytest
from minigrid.core.constants import COLOR_TO_IDX, OBJECT_TO_IDX

from env_registry.babyai.captioner import caption_babyai

EMPTY, WALL = OBJECT_TO_IDX["empty"], OBJECT_TO_IDX["wall"]


def view(fill: str = "empty") -> np.ndarray:
    """A 7x7 egocentric view: agent at x=3, y=6, facing -y (forward = smaller y)."""
    image = np.zeros((7, 7, 3), dtype=np.uint8)
    image[:, :, 0] = OBJECT_TO_IDX[fill]
    image[3, 6] = (OBJECT_TO_IDX["agent"], 0, 0)
    return image


def put(image, x, y, obj, color="red", state=0):
    image[x, y] = (OBJECT_TO_IDX[obj], COLOR_TO_IDX[color], state)


def test_walls_forward_and_left_but_not_right_when_out_of_view():
    image = view()
    image[:, 0, 0] = WALL  # a wall row 6 steps ahead
    image[0, :, 0] = WALL  # a wall column 3 steps to the left
    assert caption_babyai(image) == "You see a wall 6 steps forward. You see a wall 3 steps left."


def test_object_in_the_way_hides_the_wall_behind_it():
    image = view()
    image[:, 0, 0] = WALL
    put(image, 3, 4, "ball", "red")  # straight ahead, 2 steps
    assert caption_babyai(image) == "You see a red ball 2 steps forward."


def test_left_right_and_forward_offsets():
    image = view()
    put(image, 1, 5, "ball", "red")  # 2 left, 1 forward
    put(image, 6, 2, "key", "purple")  # 3 right, 4 forward
    put(image, 4, 6, "box", "blue")  # 1 right, level with the agent
    assert caption_babyai(image) == (
        "You see a blue box 1 step right. "
        "You see a red ball 2 steps left and 1 step forward. "
        "You see a purple key 3 steps right and 4 steps forward."
    )


@pytest.mark.parametrize("state, word", [(0, "open"), (1, "closed"), (2, "locked")])
def test_doors_carry_their_state(state, word):
    image = view()
    put(image, 5, 6, "door", "yellow", state)
    assert caption_babyai(image) == f"You see a {word} yellow door 2 steps right."


def test_carried_object_and_empty_view():
    image = view(fill="unseen")
    assert caption_babyai(image) == "You see nothing in front."
    assert caption_babyai(image, ("purple", "key")) == (
        "You see nothing in front. You carry a purple key."
    )


def test_real_level_orientation_before_and_after_turning_right():
    """GoToLocal seed 3: agent at (1, 1) of the 8x8 room, facing east (checked with
    pprint_grid and the grid's objects); after `right` it faces south, so objects that were
    to its right are now ahead and the west wall is on its right."""
    import env_registry

    env = env_registry.make_env("BabyAI-Text-GoToLocal-v0")
    _, info = env.reset(seed=3)
    assert info["mission"] == "go to the red key"
    assert info["caption"] == (
        "You see a wall 1 step left. You see a green box 2 steps forward. "
        "You see a red box 1 step right and 1 step forward. You see a grey ball 3 steps forward. "
        "You see a red key 2 steps right and 3 steps forward. "
        "You see a red box 3 steps right and 2 steps forward. "
        "You see a red ball 3 steps right and 4 steps forward."
    )
    _, _, _, _, info = env.step(env.level.actions.right)
    assert info["caption"] == (
        "You see a wall 1 step right. You see a green box 2 steps left. "
        "You see a red box 1 step left and 1 step forward. You see a grey ball 3 steps left. "
        "You see a grey key 4 steps forward. You see a red key 3 steps left and 2 steps forward. "
        "You see a red box 2 steps left and 3 steps forward."
    )
