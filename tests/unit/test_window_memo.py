"""The memo behind bk-pref's and bk-goal's potentials: a window scored once is looked up after,
and a cleared memo never serves a value under a reused state id."""

import numpy as np
import pytest

from rl_bk.methods.bk.sources import WindowMemo


def keys_of(
    memo: WindowMemo, states: list[str], windows: list[list[int]], actions: list[list[int]]
):
    """Window keys for windows given as indices into ``states`` (-1: padding)."""
    ids = memo.state_ids(states)
    index = np.asarray(windows)
    slots = memo.window_slots(ids, index)
    return memo.window_keys(slots, np.asarray(actions))


def test_a_window_is_known_by_its_states_and_actions():
    memo = WindowMemo()
    memo.start_batch()
    assert memo.state_ids(["a", "b", "a"]).tolist() == [0, 1, 0]
    keys = keys_of(
        memo,
        ["a", "b", "a"],
        [[-1, 0], [0, 1], [1, 2], [-1, 2], [0, 1]],
        [[9, 9], [0, 9], [0, 9], [9, 9], [1, 9]],
    )
    # Rows 0 and 3: padding then "a". Row 4 differs from row 1 by its action only.
    values, missing = memo.lookup(keys)
    assert np.isnan(values).all()
    assert list(missing.values()) == [[0, 3], [1], [2], [4]]
    memo.store(missing, [10.0, 11.0, 12.0, 14.0])
    values, missing = memo.lookup(keys)
    assert values.tolist() == [10.0, 11.0, 12.0, 10.0, 14.0] and not missing
    assert (memo.hits, memo.misses) == (5, 5) and memo.hit_rate() == 0.5


def test_a_full_memo_clears_both_tables_so_reused_ids_never_find_old_values():
    memo = WindowMemo(capacity=2)
    memo.start_batch()
    old = keys_of(memo, ["a", "b", "c"], [[0], [1], [2]], [[9], [9], [9]])
    memo.store(old, [1.0, 2.0, 3.0])
    memo.start_batch()  # three states and three windows: over capacity
    assert memo.clears == 1 and len(memo) == 0
    # A new state takes id 0, as "a" had: its window must be scored, not given a's value.
    new = keys_of(memo, ["d"], [[0]], [[9]])
    assert new == old[:1]
    values, missing = memo.lookup(new)
    assert np.isnan(values[0]) and list(missing.values()) == [[0]]
    memo.start_batch()  # one state, no window: not full
    assert memo.clears == 1
    memo.state_ids(["e", "f"])
    memo.start_batch()  # three states, still no window: full all the same
    assert memo.clears == 2 and memo.state_ids(["e"]).tolist() == [0]


def test_capacity_must_be_positive():
    with pytest.raises(ValueError, match="capacity must be >= 1"):
        WindowMemo(capacity=0)


def test_padding_keeps_its_own_slot_apart_from_the_first_state():
    # Clipping -1 to row 0 alone would give padding the first state's id.
    slots = WindowMemo.window_slots(np.array([5, 7]), np.array([[-1, 0], [0, 0], [-1, 1]]))
    assert slots.tolist() == [[-1, 5], [5, 5], [-1, 7]]
