"""RND-PPO's numbers, in plain numpy: two-headed GAE (episodic extrinsic, non-episodic
intrinsic with its own discount), the combined advantage, and the intrinsic-reward scale (the
running std of its discounted sum), following CleanRL's ``ppo_rnd_envpool.py``. Everything RND
changes about PPO's targets lives here, with no Ray instance needed, so it can be checked by
hand (tests/unit/test_rnd_advantages.py). Why each: docs/methods.md#rnd-ppos-pieces.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from ray.rllib.utils.postprocessing.value_predictions import compute_value_targets

from rl_bk.running_stats import RewardForwardFilter  # noqa: F401  (RND's scale, shared with BK)

#: PPO's floor on the advantage std (RLlib's GeneralAdvantageEstimation uses the same).
MIN_ADVANTAGE_STD = 1e-4
#: Keeps the division finite before any intrinsic return has been seen.
RETURN_VAR_EPSILON = 1e-8


class TwoHeadedAdvantages(NamedTuple):
    ext_advantages: np.ndarray
    int_advantages: np.ndarray
    ext_returns: np.ndarray  # the extrinsic value head's targets
    int_returns: np.ndarray  # the intrinsic value head's targets


def gae(
    rewards: np.ndarray, values: np.ndarray, *, gamma: float, lambda_: float, bootstrap: bool
) -> tuple[np.ndarray, np.ndarray]:
    """GAE advantages and returns of one chunk.

    Args:
        rewards: the chunk's ``n`` rewards.
        values: ``n + 1`` value predictions; ``values[n]`` is the bootstrap value.
        bootstrap: whether the future after the last step is worth ``values[n]``; False
            when the episode terminated there.

    Returns:
        ``(advantages, returns)``, ``n`` each, with ``returns = advantages + values[:n]``.
    """
    rewards = np.asarray(rewards, dtype=np.float64)
    values = np.asarray(values, dtype=np.float64)
    n = len(rewards)
    if len(values) != n + 1:
        raise ValueError(f"a chunk of {n} rewards needs {n + 1} values, got {len(values)}")
    if n == 0:
        return np.zeros(0), np.zeros(0)
    # RLlib's GAE on the chunk as its learner sees it: n real steps plus the artificial one
    # that carries the bootstrap value. The last real step ends the chunk (truncated: nothing
    # propagates back from the artificial step) and, if terminated, has no bootstrap.
    terminateds = np.zeros(n + 1)
    terminateds[n - 1] = 0.0 if bootstrap else 1.0
    truncateds = np.zeros(n + 1)
    truncateds[n - 1] = 1.0
    targets = compute_value_targets(
        values, np.append(rewards, 0.0), terminateds, truncateds, gamma=gamma, lambda_=lambda_
    )
    returns = targets[:n].astype(np.float64)
    return returns - values[:n], returns


def two_headed_advantages(
    ext_rewards: np.ndarray,
    int_rewards: np.ndarray,
    ext_values: np.ndarray,
    int_values: np.ndarray,
    terminated: bool,
    *,
    gamma: float,
    int_gamma: float,
    lambda_: float,
) -> TwoHeadedAdvantages:
    """Both heads' advantages and returns for one chunk (``n`` rewards, ``n + 1`` values).

    The extrinsic head is episodic (no bootstrap when ``terminated``); the intrinsic head
    always bootstraps, with ``int_gamma``.
    """
    ext_adv, ext_ret = gae(
        ext_rewards, ext_values, gamma=gamma, lambda_=lambda_, bootstrap=not terminated
    )
    int_adv, int_ret = gae(
        int_rewards, int_values, gamma=int_gamma, lambda_=lambda_, bootstrap=True
    )
    return TwoHeadedAdvantages(ext_adv, int_adv, ext_ret, int_ret)


def combine_advantages(
    ext_advantages: np.ndarray, int_advantages: np.ndarray, *, ext_coeff: float, int_coeff: float
) -> np.ndarray:
    """The advantage the policy follows: ``ext_coeff * A_ext + int_coeff * A_int``."""
    return ext_coeff * np.asarray(ext_advantages) + int_coeff * np.asarray(int_advantages)


def standardize(advantages: np.ndarray) -> np.ndarray:
    """Zero mean, unit std (std floored as in RLlib's PPO), over the whole train batch."""
    advantages = np.asarray(advantages, dtype=np.float64)
    if advantages.size == 0:
        return advantages
    return (advantages - advantages.mean()) / max(MIN_ADVANTAGE_STD, float(advantages.std()))


def merge_moments(mean, var, count, batch_mean, batch_var, batch_count):
    """Running mean and (population) variance after adding a batch with the given moments.

    Chan et al.'s parallel update, as in gym's ``RunningMeanStd`` that CleanRL uses. Only
    arithmetic, so it works on numpy arrays and torch tensors alike.
    """
    delta = batch_mean - mean
    total = count + batch_count
    new_mean = mean + delta * batch_count / total
    m2 = var * count + batch_var * batch_count + delta**2 * count * batch_count / total
    return new_mean, m2 / total, total


def scale_by_return_std(rewards: np.ndarray, return_var: float) -> np.ndarray:
    """Intrinsic rewards divided by the running std of intrinsic returns (no mean removed:
    novelty is a bonus, and its sign must not flip)."""
    return np.asarray(rewards, dtype=np.float64) / np.sqrt(float(return_var) + RETURN_VAR_EPSILON)
