"""Chunks, windows and the Parquet trajectory dataset, on hand-made episodes."""

import numpy as np
import pytest

from rl_bk.knowledge.dataset import DatasetError, read_episodes, sample_segments, write_episodes
from rl_bk.knowledge.trajectory import Chunk, caption_history, windows
from rl_bk.methods.bk.sources import split_by_chunk


def chunk(n, terminated=False, mission="go to the red ball"):
    return Chunk(
        np.arange(n + 1, dtype=np.float32)[:, None] * [1, 10],
        [f"s{t}" for t in range(n + 1)],
        list(range(n)),
        [0.0] * (n - 1) + [1.0],
        terminated=terminated,
        mission=mission,
    )


def test_windows_hold_the_last_states_and_the_actions_between_them():
    ws = windows(chunk(3), horizon=2)
    assert [w.captions for w in ws] == [["s0"], ["s0", "s1"], ["s1", "s2"], ["s2", "s3"]]
    assert [w.actions for w in ws] == [[], [0], [1], [2]]
    assert ws[3].observations[:, 0].tolist() == [2.0, 3.0]


def test_caption_history_reads_as_bk_segments():
    text = caption_history(windows(chunk(2), horizon=3)[2], "babyai")
    assert text == (
        "Step 1: s0 You choose the action: turn left.\n"
        "Step 2: s1 You choose the action: turn right.\n"
        "Current observation: s2"
    )


def test_a_chunk_refuses_mismatched_lengths():
    with pytest.raises(ValueError, match="needs 3 observations"):
        Chunk(np.zeros((2, 1)), ["a", "b", "c"], [0, 1])


def test_dataset_round_trip_keeps_episodes_whole(tmp_path):
    eps = [chunk(3, terminated=True), chunk(1, mission=None)]
    eps[1].truncated = True
    write_episodes(tmp_path, eps[:1], {"env": "x"})
    write_episodes(tmp_path, eps[1:])
    back = read_episodes(tmp_path)
    assert [len(e) for e in back] == [3, 1]
    assert back[0].terminated and not back[0].truncated and back[1].truncated
    assert back[0].mission == "go to the red ball" and back[1].mission is None
    np.testing.assert_array_equal(back[0].observations, eps[0].observations)
    assert back[0].rewards.tolist() == [0.0, 0.0, 1.0] and back[0].captions[-1] == "s3"


def test_segments_are_cut_from_long_enough_episodes(tmp_path):
    segs = sample_segments([chunk(2), chunk(6, terminated=True)], 5, 20, np.random.default_rng(0))
    assert all(len(s) == 5 and len(s.captions) == 6 for s in segs)
    for s in segs:  # only the segment that ends the episode keeps its termination
        assert s.terminated == (s.captions[-1] == "s6")
    with pytest.raises(DatasetError, match="no episode"):
        sample_segments([chunk(2)], 5, 1, np.random.default_rng(0))
    with pytest.raises(DatasetError, match="collect one first"):
        read_episodes(tmp_path / "empty")


def test_split_by_chunk_gives_each_chunk_its_states():
    parts = split_by_chunk(np.arange(7.0), [chunk(2), chunk(3)])
    assert [p.tolist() for p in parts] == [[0, 1, 2], [3, 4, 5, 6]]
