"""The BK reference check's port (bench/bk_reference_check.py): rl-bk's potential written in
BK's format (``compute_reward(cur_obs, past_obs, past_actions)`` over BK's scaled 3x7x7
observations) returns what rl-bk's ``compute_potential(window)`` returns for the same
window, here in rl-bk's environment without BK's code (``--check-port`` runs the same
comparison through BK's own loader in BK's environment)."""

import numpy as np
import pytest

from bench import bk_reference_check as check


@pytest.fixture(scope="module")
def oracle(tmp_path_factory):
    """rl-bk's ORACLE BK-Code potential, as its knowledge pipeline writes it."""
    code, facts = check.oracle_potential(tmp_path_factory.mktemp("oracle"))
    assert facts["is_oracle"] and facts["mission"] is None  # task-agnostic: BK's setting
    return code


@pytest.fixture(scope="module")
def episodes():
    return check.random_episodes_rl_bk(600, seed=3)


def test_port_agrees_with_rl_bk_on_random_transitions(oracle, episodes):
    bk_code = check.bk_format_code(oracle, horizon=5)
    reference = check.reference_values(episodes, oracle, horizon=5)
    result = check.agreement(check.port_values(episodes, bk_code), reference)
    assert result["transitions"] == 600
    assert result["agree"] == 600, result["disagree"]
    # BK pads an episode's first window with its first state and action; rl-bk's own window
    # starts at the episode: they differ there only.
    assert result["window_differs"] == result["window_differs_at_episode_start"]
    assert result["episode_starts"] == len(episodes)


def test_rl_bks_training_path_values_every_state_with_bks_window(oracle, episodes):
    # The shaping term's potentials, the episodes cut into chunks of 16 steps (a cut every
    # train batch, more often than training cuts), equal rl-bk's function on BK's window:
    # BK's padding at episode starts, the history carried across every cut.
    reference = check.reference_values(episodes, oracle, horizon=5)
    in_training = check.rl_path_values(episodes, oracle, horizon=5, chunk_steps=16)
    np.testing.assert_allclose(in_training, reference["bk"])
    assert not np.allclose(reference["bk"], reference["rl_bk"])  # the padding matters here


def test_port_rebuilds_rl_bk_captions_from_bk_observations(oracle, episodes):
    bk_code = check.bk_format_code(oracle, horizon=5)
    port_image = check.load_function(bk_code, "port_image")
    port_caption = check.load_function(bk_code, "port_caption")
    for ep in episodes:
        for image, caption in zip(ep.images, ep.captions):
            assert np.array_equal(port_image(check.bk_obs(image)), image)
            assert port_caption(check.bk_obs(image)) == caption  # the env's own caption
    assert check.captions_of(episodes[0]) == episodes[0].captions


def test_port_reads_the_carried_object_from_the_agents_cell(oracle, episodes):
    from minigrid.core.constants import COLOR_TO_IDX, OBJECT_TO_IDX

    from env_registry.babyai.captioner import caption_babyai

    port_caption = check.load_function(check.bk_format_code(oracle, horizon=5), "port_caption")
    image = np.array(episodes[0].images[0])
    image[3, 6] = (OBJECT_TO_IDX["key"], COLOR_TO_IDX["purple"], 0)  # minigrid draws it there
    expected = caption_babyai(image, ("purple", "key"))
    assert expected.endswith("You carry a purple key.")
    assert port_caption(check.bk_obs(image)) == expected


def test_zero_potential_in_both_formats(episodes):
    bk_code = check.bk_format_code(check.ZERO_POTENTIAL, horizon=5)
    assert set(check.port_values(episodes[:3], bk_code)) == {0.0}


def test_bk_window_pads_an_episode_start_with_its_first_state():
    assert check.bk_slots(0) == [0, 0, 0, 0, 0, 0]
    assert check.bk_slots(2) == [0, 0, 0, 0, 1, 2]
    assert check.bk_slots(9) == [4, 5, 6, 7, 8, 9]


def test_bk_success_count_from_mean_return_and_length():
    # 10 of 50 episodes succeed in 100 steps each, 40 run out at 400 steps.
    ret = 10 * (1 - 0.9 * 100 / 400) / 50
    length = (10 * 100 + 40 * 400) / 50
    console = (
        "[INFO] x: \nStep 21504 stats\n========================================\n"
        f"eval/episodic_length            {length:.4f}\n"
        f"eval/episodic_return              {ret:.4f}\n"
        "learner/SPS                      512.0000\n"
        "========================================\n"
    )
    (e,) = check.parse_bk_console(console)
    assert e["env_steps"] == 21504 and e["success"] == 0.2 and e["sps"] == 512.0
    assert e["success_residual"] < 0.05


def test_smoke_runs_never_write_the_plans_results():
    assert check.output_for(check.STEPS, check.SEEDS).results == check.RESULTS_DIR
    smoke = check.output_for(4096, [0])
    assert smoke.results != check.RESULTS_DIR and smoke.name != check.NAME
    with pytest.raises(check.CheckError):
        check.output_for(4096, [0], name=check.NAME)


def test_parts_select_by_prefix():
    all_parts = check.parts([0, 1])
    assert len(all_parts) == 8
    assert check.select_parts(all_parts, "bk/oracle") == ["bk/oracle/0", "bk/oracle/1"]
    assert check.select_parts(all_parts, "rl-bk/zero/1") == ["rl-bk/zero/1"]
    with pytest.raises(check.CheckError):
        check.select_parts(all_parts, "ppo")
