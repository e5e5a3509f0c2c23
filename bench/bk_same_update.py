"""One PPO update on the same batch, in BK's ``train_rs.py`` and in rl-bk's learner.

BK's code (mansicer/background-knowledge-rl, from the user's clone, unmodified) runs its
first rollout on RedBall-S20 with the oracle BK-Code potential the reference check exports;
a driver executes ``train_rs.py`` with three hooks put in at fixed lines (each must be found
exactly once), which save the rollout, the agent's weights, every minibatch's indices and
losses, and the weights after the update, then stop. rl-bk's learner for the task (the
``ppo`` method on 1 x the rewards BK's code trained on, so that its reward rewrite changes
nothing) gets BK's agent's weights, BK's rollout as RLlib episode chunks (one per env and
episode piece, as its env runners send them), runs its learner connector pipeline, then takes
the update in BK's minibatch order through its own update step. Compared:

- ``batch``: every real row's observation and action land where BK's index says;
- ``values``: the sampled values (``VF_PREDS``) and the value targets against BK's
  ``ext_values`` and ``ext_returns``, the advantages (targets - values) against BK's;
- ``losses``: each minibatch's policy, value and entropy terms;
- ``weights``: every parameter after the update.

    python -m bench.bk_gap_checks --checks update

BK's environment and the exported potential are the reference check's
(``python -m bench.bk_reference_check --setup-bk-env --bk-repo PATH`` makes them).
"""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from bench.bk_reference_check import (
    BK_ENV_ID,
    BK_SRC,
    TASK,
    bk_python,
    bk_run_env,
    output_for,
    potential_paths,
    write_potentials,
)

#: (a line of train_rs.py, where the hook goes, the hook): the driver asserts each line is
#: found exactly once, so a changed train_rs.py fails loudly instead of comparing nothing.
_HOOKS = [
    (
        "        # Optimizing the policy and value network\n",
        "before",
        "        __rlbk_hook__('batch', locals())\n",
    ),
    (
        "                optimizer.step()\n",
        "after",
        "                __rlbk_hook__('step', locals())\n",
    ),
    (
        "        if last_eval_step == 0 or (global_step - last_eval_step) >= args.eval_freq "
        "or global_step >= args.total_timesteps:\n",
        "before",
        "        __rlbk_hook__('updated', locals())\n",
    ),
]

#: Every hook driver's start: its arguments, and train_rs.py's source with the hooks put in.
DRIVER_HEAD = r"""
import pickle, sys
import numpy as np
import torch

out_path, src_path, hooks = sys.argv[1], sys.argv[2], pickle.loads(bytes.fromhex(sys.argv[3]))
update = int(sys.argv[4])
sys.argv = ["train_rs.py", *sys.argv[5:]]
source = open(src_path).read()
for line, where, hook in hooks:
    if source.count(line) != 1:
        raise SystemExit(f"train_rs.py changed: {line.strip()!r} found {source.count(line)} times")
    source = source.replace(line, hook + line if where == "before" else line + hook)
"""

#: Every hook driver's end: train_rs.py run with the driver's ``hook``; it must stop there.
DRIVER_TAIL = r"""
exec(compile(source, src_path, "exec"), {"__name__": "__main__", "__file__": src_path,
                                         "__rlbk_hook__": hook})
raise SystemExit("train_rs.py ended before the driver's last hook")
"""

_DRIVER = (
    DRIVER_HEAD
    + r"""
saved = {"steps": []}

def numpy(x):
    return x.detach().cpu().numpy().copy()

def hook(kind, frame):
    if frame["update"] != update:
        return
    if kind == "batch":
        agent, optimizer = frame["agent"], frame["optimizer"]
        names = {id(p): n for n, p in agent.named_parameters()}
        adam = {names[id(p)]: {k: numpy(v) if torch.is_tensor(v) else v
                               for k, v in optimizer.state[p].items()}
                for p in optimizer.param_groups[0]["params"] if p in optimizer.state}
        saved.update(
            weights={k: numpy(v) for k, v in agent.state_dict().items()}, adam=adam,
            obs=numpy(frame["obs"]), actions=numpy(frame["actions"]),
            logprobs=numpy(frame["logprobs"]), rewards=numpy(frame["rewards"]),
            dones=numpy(frame["dones"]), values=numpy(frame["ext_values"]),
            next_obs=numpy(frame["next_obs"]), next_done=numpy(frame["next_done"]),
            advantages=numpy(frame["ext_advantages"]), returns=numpy(frame["ext_returns"]),
            gamma=frame["args"].gamma, gae_lambda=frame["args"].gae_lambda)
    elif kind == "step":
        saved["steps"].append({
            "indices": np.asarray(frame["mb_inds"]).copy(),
            "policy": frame["pg_loss"].item(), "value": frame["ext_v_loss"].item(),
            "entropy": frame["entropy_loss"].item(), "loss": frame["loss"].item()})
    else:
        saved["weights_after"] = {k: numpy(v) for k, v in frame["agent"].state_dict().items()}
        with open(out_path, "wb") as f:
            pickle.dump(saved, f)
        raise SystemExit(0)

"""
    + DRIVER_TAIL
)

#: BK's IntrinsicAgent's parameter names -> GridConvPPOModule's.
_NAMES = {
    "network.": "torso.",
    "extra_layer.0.": "value_features.0.",
    "actor.": "pi.",
    "critic_ext.": "vf.",
    "critic_int.": "int_vf.",
}


def rl_bk_name(bk_name: str) -> str:
    for bk, ours in _NAMES.items():
        if bk_name.startswith(bk):
            return ours + bk_name[len(bk) :]
    raise KeyError(f"no rl-bk parameter for BK's {bk_name}")


def run_hooked_train_rs(
    driver: str, hooks: list[tuple[str, str, str]], update: int, seed: int, workdir: Path
) -> Any:
    """BK's ``train_rs.py`` on RedBall-S20 with the exported oracle potential, for ``update``
    updates of 1,024 env steps, executed by ``driver`` (a script: output path, train_rs.py's
    path, the hex-pickled ``hooks``, ``update``, then train_rs.py's arguments); returns what the
    driver pickled."""
    import pickle

    out = output_for(300_000, [seed])
    write_potentials(out)
    _, potential_dir = potential_paths(out, "oracle")
    (workdir / "prompts").symlink_to(BK_SRC.resolve() / "prompts")
    saved = workdir / "bk-hooked.pkl"
    cmd = [
        str(bk_python()),
        "-c",
        driver,
        str(saved),
        str(BK_SRC.resolve() / "train_rs.py"),
        pickle.dumps(hooks).hex(),
        str(update),
        "--alg",
        "bk-code",
        "--pretrain_path",
        str(potential_dir.resolve()),
        "--env",
        BK_ENV_ID,
        "--seed",
        str(seed),
        "--total_timesteps",
        str(1024 * update),
    ]
    env = {**bk_run_env(), "PYTHONPATH": str(BK_SRC.resolve())}
    done = subprocess.run(cmd, cwd=workdir, env=env, capture_output=True, text=True)
    if done.returncode != 0 or not saved.is_file():
        raise RuntimeError(
            f"BK's train_rs.py under a hook driver failed (exit "
            f"{done.returncode}):\n{done.stderr[-3000:]}"
        )
    return pickle.loads(saved.read_bytes())


def run_bk_update(seed: int, update: int, workdir: Path) -> dict:
    """BK's ``update``-th update (from 1) on RedBall-S20 with the exported oracle potential
    (see the module docstring); returns what the hooks saved."""
    return run_hooked_train_rs(_DRIVER, _HOOKS, update, seed, workdir)


def rl_bk_view(bk_obs: np.ndarray, obs_size: int) -> np.ndarray:
    """rl-bk's BabyAI observation of BK's (3, 7, 7) view (channels / 10, 5, 3): the view in
    minigrid's (x, y, channel) order / 10, then the mission's code, zeros here (BK's agent and
    rl-bk's conv network never read it)."""
    view = np.rint(bk_obs * np.array([10.0, 5.0, 3.0]).reshape(3, 1, 1)).transpose(1, 2, 0)
    out = np.zeros(obs_size, np.float32)
    out[: view.size] = view.reshape(-1) / 10.0
    return out


def episode_pieces(bk: dict, obs_size: int):
    """BK's rollout (128 steps x 8 envs) as the episode chunks an env runner sends, and for
    each chunk the flat BK index (step * envs + env) of each of its steps."""
    from ray.rllib.core.columns import Columns
    from ray.rllib.env.single_agent_episode import SingleAgentEpisode

    steps, envs = bk["actions"].shape
    pieces, indices = [], []
    for e in range(envs):
        starts = [0] + [t for t in range(1, steps) if bk["dones"][t, e]]
        for a, b in zip(starts, [*starts[1:], steps]):
            ended = b < steps or bool(bk["next_done"][e])
            last = bk["next_obs"][e] if b == steps else bk["obs"][b - 1, e]  # unread if ended
            obs = [rl_bk_view(bk["obs"][t, e], obs_size) for t in range(a, b)]
            obs.append(rl_bk_view(last, obs_size))
            pieces.append(
                SingleAgentEpisode(
                    observations=obs,
                    actions=[int(x) for x in bk["actions"][a:b, e]],
                    rewards=[float(r) for r in bk["rewards"][a:b, e]],
                    infos=[{}] * len(obs),
                    extra_model_outputs={
                        Columns.ACTION_LOGP: [np.float32(x) for x in bk["logprobs"][a:b, e]]
                    },
                    terminated=ended,
                    len_lookback_buffer=0,
                )
            )
            indices.append([t * envs + e for t in range(a, b)])
    return pieces, indices


def rl_bk_learner(seed: int):
    """The task's ``ppo`` learner on 1 x the rewards it is given, its first epoch not shuffled
    (BK's minibatch order is replayed instead)."""
    import env_registry
    from rl_bk.experiments.methods import get_method
    from rl_bk.experiments.task_config import load_task

    env_registry.register_all()
    task = load_task(TASK)
    env = env_registry.make_env(task.env, task.env_config)
    config = get_method("ppo").build(task, seed, {"extrinsic_coeff": 1.0})
    config.environment(observation_space=env.observation_space, action_space=env.action_space)
    config.training(shuffle_first_epoch=False)
    env.close()
    return config.build_learner(), int(env.observation_space.shape[0])


def load_adam_state(learner, module, adam: dict) -> None:
    """BK's Adam moments and step counts, by parameter name, into the learner's optimiser."""
    import torch
    from ray.rllib.core import DEFAULT_MODULE_ID

    (optimizer,) = [o for _, o in learner.get_optimizers_for_module(DEFAULT_MODULE_ID)]
    params = dict(module.named_parameters())
    for bk_name, state in adam.items():
        optimizer.state[params[rl_bk_name(bk_name)]] = {
            k: torch.as_tensor(v) for k, v in state.items()
        }


def _number(x) -> float:
    return float(x.detach()) if hasattr(x, "detach") else float(x)


def first_epoch_envs(
    env_of_row: dict[int, int], order: np.ndarray, minibatch: int = 256, rows: int | None = None
) -> list[int]:
    """How many envs' steps each minibatch of a first epoch holds, when it takes the batch's
    rows in ``order`` (RLlib's iterator: the batch as built; CleanRL's: a permutation)."""
    rows = len(order) if rows is None else rows
    return [
        len({env_of_row[r] for r in order[i : i + minibatch] if r in env_of_row})
        for i in range(0, rows - minibatch + 1, minibatch)
    ]


def check_update(seed: int = 0, update: int = 4, rtol: float = 1e-4) -> dict:
    import torch
    from ray.rllib.core import DEFAULT_MODULE_ID
    from ray.rllib.core.columns import Columns
    from ray.rllib.core.learner.learner import ENTROPY_KEY, POLICY_LOSS_KEY, VF_LOSS_KEY
    from ray.rllib.evaluation.postprocessing import Postprocessing

    with tempfile.TemporaryDirectory() as tmp:
        bk = run_bk_update(seed, update, Path(tmp))
    learner, obs_size = rl_bk_learner(seed)
    module = learner.module[DEFAULT_MODULE_ID]
    module.load_state_dict({rl_bk_name(k): torch.from_numpy(v) for k, v in bk["weights"].items()})
    load_adam_state(learner, module, bk["adam"])
    pieces, indices = episode_pieces(bk, obs_size)
    batch = learner._learner_connector(
        rl_module=learner.module, batch={}, episodes=pieces, shared_data={}, metrics=learner.metrics
    )
    batch = batch[DEFAULT_MODULE_ID]

    # BK's flat index -> the batch's row (each chunk's steps, then RLlib's artificial step)
    row_of, row = {}, 0
    for piece in indices:
        row_of.update({index: row + i for i, index in enumerate(piece)})
        row += len(piece) + 1
    n = len(row_of)
    env_of_row = {r: i % bk["actions"].shape[1] for i, r in row_of.items()}
    total = len(batch[Columns.LOSS_MASK])
    envs_per_minibatch = {
        "rllib_first_epoch": first_epoch_envs(env_of_row, np.arange(total)),
        "shuffled": first_epoch_envs(env_of_row, np.random.default_rng(seed).permutation(total)),
    }
    rows = torch.as_tensor([row_of[i] for i in range(n)])
    flat = {
        k: bk[k].reshape(n, *bk[k].shape[2:])
        for k in ("obs", "actions", "values", "returns", "advantages")
    }
    obs_ok = np.allclose(
        batch[Columns.OBS][rows].numpy(), np.stack([rl_bk_view(o, obs_size) for o in flat["obs"]])
    )
    actions_ok = np.array_equal(batch[Columns.ACTIONS][rows].numpy(), flat["actions"].astype(int))
    mask = batch[Columns.LOSS_MASK]
    real_ok = bool(mask[rows].all()) and int(mask.sum()) == n

    def gap(ours, theirs) -> float:
        ours, theirs = np.asarray(ours, np.float64), np.asarray(theirs, np.float64)
        return float(np.abs(ours - theirs).max() / max(1e-8, np.abs(theirs).max()))

    values = batch[Columns.VF_PREDS][rows].numpy()
    targets = batch[Postprocessing.VALUE_TARGETS][rows].numpy()
    value_gaps = {
        "sampled_values": gap(values, flat["values"]),
        "value_targets": gap(targets, flat["returns"]),
        "advantages": gap(targets - values, flat["advantages"]),
    }

    losses = []
    for step in bk["steps"]:
        picked = rows[torch.as_tensor(step["indices"])]
        minibatch = {k: v[picked] for k, v in batch.items()}
        learner._uncompiled_update({DEFAULT_MODULE_ID: minibatch})
        peek = {
            key: _number(learner.metrics.peek((DEFAULT_MODULE_ID, key)))
            for key in (POLICY_LOSS_KEY, VF_LOSS_KEY, ENTROPY_KEY)
        }
        losses.append(
            {
                "bk": [step["policy"], step["value"], step["entropy"]],
                "rl-bk": [peek[POLICY_LOSS_KEY], peek[VF_LOSS_KEY], peek[ENTROPY_KEY]],
            }
        )
    loss_gap = max(gap(m["rl-bk"], m["bk"]) for m in losses)
    after = {k: v.detach().numpy() for k, v in module.state_dict().items()}
    # absolute: the largest difference between the two updated networks, against the largest
    # change the update made to any weight
    difference = max(
        float(np.abs(after[rl_bk_name(k)] - v).max()) for k, v in bk["weights_after"].items()
    )
    change = max(float(np.abs(bk["weights_after"][k] - v).max()) for k, v in bk["weights"].items())
    ended = int(sum(1 for p in pieces if p.is_terminated))
    ok = (
        obs_ok
        and actions_ok
        and real_ok
        and max(value_gaps.values()) < rtol
        and loss_gap < rtol
        and difference < 1e-3 * change
    )
    return {
        "seed": seed,
        "update": update,
        "rows": n,
        "chunks": len(pieces),
        "episodes_ended": ended,
        "minibatches": len(losses),
        "batch": {"observations": obs_ok, "actions": actions_ok, "loss_mask": real_ok},
        "envs_per_minibatch": envs_per_minibatch,
        "values": value_gaps,
        "loss_gap": loss_gap,
        "losses_first_last": [losses[0], losses[-1]],
        "weights_max_difference": difference,
        "weights_max_change": change,
        "ok": bool(ok),
    }
