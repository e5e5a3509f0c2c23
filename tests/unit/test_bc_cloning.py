"""BC-PPO's cloning: the pairs a ``bc`` artifact keeps, and the supervised fit on a policy
head, on hand-made episodes."""

import numpy as np
import pytest
import torch
from torch import nn

from rl_bk.knowledge.trajectory import Chunk
from rl_bk.methods.bc.cloning import clone_policy, read_bc_data, write_bc_data


class TinyPolicy(nn.Module):
    """What clone_policy needs of an RLModule: forward_train(batch) -> action logits."""

    def __init__(self, obs_dim: int, n_actions: int) -> None:
        super().__init__()
        self.pi = nn.Linear(obs_dim, n_actions)
        self.vf = nn.Linear(obs_dim, 1)

    def forward_train(self, batch):
        return {"action_dist_inputs": self.pi(batch["obs"])}


def episode(obs: np.ndarray, actions: np.ndarray) -> Chunk:
    return Chunk(observations=obs, captions=[""] * len(obs), actions=actions)


def test_the_artifact_keeps_each_state_with_an_action_and_its_episode(tmp_path):
    a = episode(np.arange(8, dtype=np.float32).reshape(4, 2), np.array([0, 1, 2]))
    b = episode(np.full((2, 2), 9, np.float32), np.array([1]))
    facts = write_bc_data([a, episode(np.zeros((1, 2)), np.zeros(0)), b], tmp_path)
    obs, actions, ep = read_bc_data(tmp_path)
    # The last state of an episode has no action, and an empty episode adds nothing.
    assert facts == {"pairs": 4, "episodes": 2, "obs_dim": 2}
    np.testing.assert_array_equal(obs, [[0, 1], [2, 3], [4, 5], [9, 9]])
    np.testing.assert_array_equal(actions, [0, 1, 2, 1])
    np.testing.assert_array_equal(ep, [0, 0, 0, 1])


def test_a_missing_artifact_says_how_to_build_it(tmp_path):
    with pytest.raises(FileNotFoundError, match="--kinds bc"):
        read_bc_data(tmp_path)


def test_cloning_learns_the_demonstrated_rule_and_leaves_the_value_head():
    # The demonstrator takes the action of the largest of the first three features.
    rng = np.random.default_rng(0)
    obs = rng.normal(size=(2000, 5)).astype(np.float32)
    actions = obs[:, :3].argmax(1)
    ep = np.repeat(np.arange(100), 20)
    policy = TinyPolicy(5, 3)
    vf_before = [p.detach().clone() for p in policy.vf.parameters()]
    report = clone_policy(policy, obs, actions, ep, epochs=30, batch_size=64, lr=1e-2)
    assert report["held_out_pairs"] == 200 and report["train_pairs"] == 1800
    assert report["held_out_majority_accuracy"] < 0.45
    assert report["held_out_accuracy"] > 0.9
    with torch.no_grad():
        picked = policy.forward_train({"obs": torch.from_numpy(obs)})["action_dist_inputs"]
    assert (picked.argmax(1).numpy() == actions).mean() > 0.9
    for before, after in zip(vf_before, policy.vf.parameters()):
        assert torch.equal(before, after)


def test_cloning_refuses_observations_of_another_shape():
    policy = TinyPolicy(5, 3)
    policy.observation_space = type("Box", (), {"shape": (5,)})()
    with pytest.raises(ValueError, match="same env"):
        clone_policy(
            policy, np.zeros((4, 6), np.float32), np.zeros(4, np.int64), np.zeros(4, np.int64)
        )
