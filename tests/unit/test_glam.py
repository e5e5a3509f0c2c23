"""GLAM's pieces on the tiny random Llama: action scores, value head, gradients, the prompt
wrapper and the model loader. No Ray cluster and no download: everything runs offline."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch

pytest.importorskip("transformers")
pytest.importorskip("peft")

from ray.rllib.core.columns import Columns

import env_registry
from rl_bk.methods.glam import (
    GLAMPPOConfig,
    GLAMPromptObservation,
    GLAMTorchRLModule,
    load_causal_lm,
    register_glam_env,
)
from rl_bk.methods.glam.prompt_observation import (
    ACTION_TEXTS,
    decode_prompts,
    encode_prompt,
)
from rl_bk.methods.glam.rl_module import FROZEN_FINGERPRINT

torch.set_num_threads(1)

OBS_BYTES = 256
PROMPTS = [  # different lengths: the batch is left-padded
    "Goal of the agent: go to the red ball\nAction 0:",
    "Possible actions of the agent: turn left, turn right\nGoal of the agent: pick up the "
    "purple key\nObservation 0: You see a wall 2 steps forward\nAction 0:",
    "Action 0:",
]
# Actions of different token lengths (the tiny tokenizer is byte-level: 1 token per byte).
ACTIONS = ["turn left", "go", "pick up the key", "x"]


def build_module(model: str = "tiny", **config) -> GLAMTorchRLModule:
    n = len(config.get("action_texts", ACTION_TEXTS))
    return GLAMTorchRLModule(
        observation_space=gym.spaces.Box(0, 255, (OBS_BYTES,), np.uint8),
        action_space=gym.spaces.Discrete(n),
        model_config={"model": model, "seed": 0, "value_hidden": 32, **config},
    )


def obs_batch(prompts: list[str]) -> torch.Tensor:
    return torch.from_numpy(np.stack([encode_prompt(p, OBS_BYTES) for p in prompts]))


@pytest.fixture(scope="module")
def module() -> GLAMTorchRLModule:
    return build_module(action_texts=ACTIONS)


def direct_score(lm, tokenizer, prompt: str, action: str) -> float:
    """Σ log p(action token | prompt, earlier action tokens), from one uncached, unpadded pass."""
    prompt_ids = tokenizer(prompt)["input_ids"]
    action_ids = tokenizer(" " + action, add_special_tokens=False)["input_ids"]
    with torch.no_grad():
        logits = lm(torch.tensor([prompt_ids + action_ids])).logits[0]
    log_probs = torch.log_softmax(logits.double(), dim=-1)
    start = len(prompt_ids) - 1  # the position whose logits predict the first action token
    return sum(float(log_probs[start + j, t]) for j, t in enumerate(action_ids))


def direct_last_hidden(lm, tokenizer, prompt: str) -> torch.Tensor:
    with torch.no_grad():
        ids = torch.tensor([tokenizer(prompt)["input_ids"]])
        return lm(ids, output_hidden_states=True).hidden_states[-1][0, -1]


# --------------------------------------------------------------------------------------------
# The RLModule
# --------------------------------------------------------------------------------------------
def test_scores_equal_a_direct_computation(module):
    lengths = {
        len(module.tokenizer(" " + a, add_special_tokens=False)["input_ids"]) for a in ACTIONS
    }
    assert len(lengths) == len(ACTIONS)  # every action has its own token length
    out = module.forward_inference({Columns.OBS: obs_batch(PROMPTS)})
    assert set(out) == {Columns.ACTION_DIST_INPUTS}  # env runners keep no hidden states
    scores = out[Columns.ACTION_DIST_INPUTS]
    assert scores.shape == (len(PROMPTS), len(ACTIONS)) and not scores.requires_grad
    expected = torch.tensor(
        [[direct_score(module.lm, module.tokenizer, p, a) for a in ACTIONS] for p in PROMPTS],
        dtype=scores.dtype,
    )
    torch.testing.assert_close(scores, expected, atol=1e-5, rtol=1e-6)
    # With gradients (training) the numbers are the same.
    train = module.forward_train({Columns.OBS: obs_batch(PROMPTS)})[Columns.ACTION_DIST_INPUTS]
    assert train.requires_grad
    torch.testing.assert_close(train.detach(), scores, atol=1e-5, rtol=1e-6)


def test_value_head_reads_the_last_prompt_token(module):
    with torch.no_grad():
        batch = module.forward_train({Columns.OBS: obs_batch(PROMPTS)})
        values = module.compute_values({}, embeddings=batch[Columns.EMBEDDINGS])
    for i, prompt in enumerate(PROMPTS):
        hidden = direct_last_hidden(module.lm, module.tokenizer, prompt)
        torch.testing.assert_close(batch[Columns.EMBEDDINGS][i], hidden, atol=1e-5, rtol=1e-5)
        with torch.no_grad():
            alone = module.compute_values({Columns.OBS: obs_batch([prompt])})  # no padding
            direct = module.value_head(hidden).squeeze(-1)
        torch.testing.assert_close(values[i], alone[0], atol=1e-5, rtol=1e-5)
        torch.testing.assert_close(values[i], direct, atol=1e-5, rtol=1e-5)


def test_compute_values_with_embeddings_equals_without(module, monkeypatch):
    batch = {Columns.OBS: obs_batch(PROMPTS)}
    out = module.forward_train(batch)
    with_embeddings = module.compute_values(batch, embeddings=out[Columns.EMBEDDINGS])
    monkeypatch.setattr(module, "value_chunk", 2)  # the gradient-free pass runs in chunks
    without = module.compute_values(batch)
    assert with_embeddings.shape == without.shape == (len(PROMPTS),)
    assert with_embeddings.requires_grad and not without.requires_grad
    torch.testing.assert_close(with_embeddings.detach(), without, atol=1e-5, rtol=1e-5)


def ppo_like_loss(module: GLAMTorchRLModule) -> torch.Tensor:
    batch = {Columns.OBS: obs_batch(PROMPTS)}
    out = module.forward_train(batch)
    dist = torch.distributions.Categorical(logits=out[Columns.ACTION_DIST_INPUTS])
    actions = torch.tensor([0, 1, 2])
    logp = dist.log_prob(actions)
    ratio = torch.exp(logp - logp.detach())
    advantages = torch.tensor([1.0, -0.5, 0.3])
    values = module.compute_values(batch, embeddings=out[Columns.EMBEDDINGS])
    return (
        -(ratio * advantages).mean()
        + 0.5 * ((values - 1.0) ** 2).mean()
        - 0.01 * dist.entropy().mean()
    )


def test_full_fine_tuning_reaches_every_layer():
    module = build_module(action_texts=ACTIONS[:3])
    ppo_like_loss(module).backward()
    for name, param in module.named_parameters():
        if name.startswith("lm.") and "embed_tokens" not in name:  # embeddings: used rows only
            assert param.grad is not None and param.grad.abs().sum() > 0, name
    assert all(p.grad is not None for p in module.value_head.parameters())


def test_lora_trains_only_the_adapters_and_the_value_head():
    module = build_module(action_texts=ACTIONS[:3], lora={"r": 4})
    ppo_like_loss(module).backward()
    lora = {n: p for n, p in module.named_parameters() if "lora_" in n}
    assert lora and all(p.requires_grad for p in lora.values())
    # peft starts B at zero, so the loss reaches lora_B (then, once B moves, lora_A).
    assert all(
        p.grad is not None and p.grad.abs().sum() > 0 for n, p in lora.items() if "lora_B" in n
    )
    for name, param in module.named_parameters():
        if name.startswith("lm.") and "lora_" not in name:
            assert not param.requires_grad and param.grad is None, name
    assert all(p.grad is not None for p in module.value_head.parameters())


# --------------------------------------------------------------------------------------------
# Weight sync: what RLlib sends to the env runners (get_state(inference_only=True))
# --------------------------------------------------------------------------------------------
def scores_and_values(module: GLAMTorchRLModule) -> tuple[torch.Tensor, torch.Tensor]:
    batch = {Columns.OBS: obs_batch(PROMPTS)}
    with torch.no_grad():
        return (
            module.forward_inference(batch)[Columns.ACTION_DIST_INPUTS],
            module.compute_values(batch),
        )


def move_trainable_weights(module: GLAMTorchRLModule, seed: int = 1) -> None:
    """What an update does: every trainable weight moves (peft's B starts at zero, so
    without this an untrained adapter would change no score)."""
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in module.parameters():
            if p.requires_grad:
                p.add_(0.1 * torch.randn(p.shape, generator=generator))


def tensors(state: dict) -> dict:
    """A weight-sync state without the frozen weights' fingerprint."""
    return {k: v for k, v in state.items() if k != FROZEN_FINGERPRINT}


def test_lora_sync_holds_the_adapters_and_the_value_head_only():
    module = build_module(action_texts=ACTIONS[:3], lora={"r": 4})
    synced = module.get_state(inference_only=True)
    assert isinstance(synced[FROZEN_FINGERPRINT], float)
    synced = tensors(synced)
    assert synced and all("lora_" in k or k.startswith("value_head.") for k in synced)
    trainable = {n for n, p in module.named_parameters() if p.requires_grad}
    assert set(synced) == trainable
    assert all(isinstance(v, np.ndarray) for v in synced.values())  # as RLlib's: numpy
    base = {k for k in module.state_dict() if "lora_" not in k and "value_head" not in k}
    assert base and not base & set(synced)
    assert set(module.get_state()) == set(module.state_dict())  # checkpoints stay whole
    assert module.frozen_state_keys() == base


def test_full_fine_tuning_syncs_every_weight():
    module = build_module(action_texts=ACTIONS[:3])
    assert module.frozen_state_keys() == set()
    assert set(module.get_state(inference_only=True)) == set(module.state_dict())  # no print


@pytest.mark.parametrize("lora", [{"r": 4}, None])
def test_a_runner_updated_by_the_sync_scores_like_the_learner(lora):
    learner = build_module(action_texts=ACTIONS, lora=lora)
    runner = GLAMTorchRLModule(  # built as RLlib builds an env runner's module
        observation_space=learner.observation_space,
        action_space=learner.action_space,
        model_config=learner.model_config,
        inference_only=True,
    )
    move_trainable_weights(learner)
    learner_scores, learner_values = scores_and_values(learner)
    stale, _ = scores_and_values(runner)
    assert (learner_scores - stale).abs().max() > 1e-3  # the update changed the scores
    runner.set_state(learner.get_state(inference_only=True))
    runner_scores, runner_values = scores_and_values(runner)
    torch.testing.assert_close(runner_scores, learner_scores, atol=0, rtol=0)
    torch.testing.assert_close(runner_values, learner_values, atol=0, rtol=0)
    for key, value in learner.state_dict().items():  # the frozen weights agree too
        assert torch.equal(value, runner.state_dict()[key]), key


def test_tied_embeddings_stay_out_of_the_sync(tmp_path):
    """SmolLM2 ties its output layer to its embeddings: both names of the frozen weight
    stay behind."""
    from transformers import LlamaConfig, LlamaForCausalLM

    _, tokenizer = load_causal_lm("tiny")
    config = LlamaConfig(
        vocab_size=259,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=1,
        pad_token_id=256,
        bos_token_id=257,
        eos_token_id=258,
        tie_word_embeddings=True,
    )
    torch.manual_seed(0)
    LlamaForCausalLM(config).save_pretrained(tmp_path)
    tokenizer.save_pretrained(tmp_path)
    learner = build_module(str(tmp_path), action_texts=ACTIONS[:3], lora={"r": 2})
    tied = [k for k in learner.state_dict() if "embed_tokens" in k or "lm_head" in k]
    assert len(tied) == 2 and set(tied) <= learner.frozen_state_keys()
    synced = tensors(learner.get_state(inference_only=True))
    assert not set(tied) & set(synced)
    assert all("lora_" in k or k.startswith("value_head.") for k in synced)


def test_a_state_from_another_model_is_refused():
    lora = build_module(action_texts=ACTIONS[:3], lora={"r": 4})
    full = build_module(action_texts=ACTIONS[:3])
    with pytest.raises(ValueError, match=r"does not fit this module.*missing lm\.lm_head"):
        full.set_state(lora.get_state(inference_only=True))  # the LLM's weights are absent
    refused = r"does not fit.*missing lm\.base_model.*lora_.*unexpected lm\.lm_head"
    with pytest.raises(ValueError, match=refused):
        lora.set_state(full.get_state(inference_only=True))  # names of another architecture


def test_a_runner_whose_frozen_llm_differs_refuses_the_sync():
    """The state leaves the LLM out, so each side must hold the same one: a runner whose own
    copy differs (here: another random tiny model) refuses, instead of acting on it."""
    learner = build_module(action_texts=ACTIONS[:3], lora={"r": 4})
    other = build_module(action_texts=ACTIONS[:3], lora={"r": 4}, seed=1)
    same = build_module(action_texts=ACTIONS[:3], lora={"r": 4}, seed=0)
    assert other.frozen_fingerprint != learner.frozen_fingerprint
    with pytest.raises(ValueError, match=r"frozen weights of this module's LLM .* not the"):
        other.set_state(learner.get_state(inference_only=True))
    same.set_state(learner.get_state(inference_only=True))


def test_a_whole_state_restores_every_weight():
    """A checkpoint's state (inference_only=False) is whole and loads into a new module."""
    learner = build_module(action_texts=ACTIONS[:3], lora={"r": 4})
    move_trainable_weights(learner)
    restored = build_module(action_texts=ACTIONS[:3], lora={"r": 4}, seed=1)
    assert restored.frozen_fingerprint != learner.frozen_fingerprint  # another random LLM
    restored.set_state(learner.get_state())
    for key, value in learner.state_dict().items():
        assert torch.equal(value, restored.state_dict()[key]), key
    assert restored.frozen_fingerprint == learner.frozen_fingerprint  # what it now holds


def test_a_hugging_face_folder_loads_and_scores_the_same(module, tmp_path):
    module.lm.save_pretrained(tmp_path)
    module.tokenizer.save_pretrained(tmp_path)
    from_folder = build_module(str(tmp_path), action_texts=ACTIONS)
    batch = {Columns.OBS: obs_batch(PROMPTS)}
    torch.testing.assert_close(
        from_folder.forward_inference(batch)[Columns.ACTION_DIST_INPUTS],
        module.forward_inference(batch)[Columns.ACTION_DIST_INPUTS],
    )


def test_long_prompts_are_cut_from_the_left():
    module = build_module(action_texts=ACTIONS[:2], max_prompt_tokens=12)
    ids, mask = module.tokenize(obs_batch(["0123456789 Action 0:", "Action 0:"]))
    assert ids.shape == (2, 12)
    assert module.tokenizer.decode(ids[0]) == "89 Action 0:"
    assert mask[1].tolist() == [0, 0, 0] + [1] * 9  # left padding


def test_load_causal_lm_names_the_valid_choices(tmp_path):
    with pytest.raises(ValueError, match=r'"tiny", "smollm2", or the path of a Hugging Face'):
        load_causal_lm(str(tmp_path / "missing"))
    (tmp_path / "config.json").write_text('{"model_type": "t5"}')
    (tmp_path / "tokenizer.json").write_text("{}")
    with pytest.raises(ValueError, match="is not a causal LM"):
        load_causal_lm(str(tmp_path))


def test_config_builds_the_module_spec():
    config = GLAMPPOConfig().training(glam_model="tiny", lora_r=8, max_prompt_tokens=256)
    spec = config.get_default_rl_module_spec()
    assert spec.module_class is GLAMTorchRLModule
    assert spec.model_config == {
        "model": "tiny",
        "lora": {"r": 8, "alpha": 32},
        "seed": 0,
        "max_prompt_tokens": 256,
        "float32_matmul_precision": "highest",
    }
    assert config.training(lora_r=None).glam_model_config()["lora"] is None
    assert (config.clip_param, config.entropy_coeff, config.num_epochs) == (0.2, 0.01, 4)


def test_matmul_precision_is_set_in_the_process_that_builds_the_module():
    """The learner and each env runner build the module in their own process: that is where
    the precision (TF32 on a GPU with "high") must be set; PyTorch's "highest" by default."""
    before = torch.get_float32_matmul_precision()
    try:
        build_module(float32_matmul_precision="high")
        assert torch.get_float32_matmul_precision() == "high"
        build_module()
        assert torch.get_float32_matmul_precision() == "highest"
        with pytest.raises(ValueError, match="float32_matmul_precision must be one of"):
            build_module(float32_matmul_precision="tf32")
    finally:
        torch.set_float32_matmul_precision(before)
    config = GLAMPPOConfig().environment("CartPole-v1").training(glam_model="tiny")
    with pytest.raises(ValueError, match="float32_matmul_precision"):
        config.training(float32_matmul_precision="fast")


def test_a_tasks_matmul_precision_reaches_the_module():
    from rl_bk.methods.registry import get_method

    task = gpu_task(smoke=True)
    assert task.glam.float32_matmul_precision == "highest"  # the recipe keeps PyTorch's
    task = task.model_copy(
        update={"glam": task.glam.model_copy(update={"float32_matmul_precision": "high"})}
    )
    spec = get_method("glam").build(task, 0, {}).get_default_rl_module_spec()
    assert spec.model_config["float32_matmul_precision"] == "high"


def save_tiny_model(folder) -> str:
    lm, tokenizer = load_causal_lm("tiny")
    lm.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return str(folder)


def test_a_model_path_that_is_not_a_model_folder_fails_validation(tmp_path):
    for path, what in ((tmp_path / "missing", "does not exist"), (tmp_path, "has no config.json")):
        config = GLAMPPOConfig().environment("CartPole-v1").training(glam_model=str(path))
        with pytest.raises(ValueError, match=rf"glam_model .*{what}: give \"tiny\""):
            config.validate()
    config.training(glam_model=save_tiny_model(tmp_path)).validate()


def test_gpu_settings_reach_rllibs_learner_and_env_runners():
    from rl_bk.methods.registry import get_method

    task = gpu_task(smoke=True)
    glam = task.glam.model_copy(
        update={"num_gpus_per_learner": 0.5, "num_gpus_per_env_runner": 0.25}
    )
    config = get_method("glam").build(task.model_copy(update={"glam": glam}), 0, {})
    assert (config.num_gpus_per_learner, config.num_gpus_per_env_runner) == (0.5, 0.25)
    config = config.environment("CartPole-v1").training(glam_model="tiny")
    with pytest.raises(ValueError, match="num_gpus_per_env_runner is for remote env runners"):
        config.env_runners(num_env_runners=0).validate()


# --------------------------------------------------------------------------------------------
# The GPU recipe (tune_configs/babyai-gotoredball-glam-gpu.yaml): its checks without a GPU
# --------------------------------------------------------------------------------------------
GPU_TASK = "babyai-gotoredball-glam-gpu"
GLAM_TRIAL = {"variant": {"method": "glam", "params": {}}, "seed": 0}


def gpu_task(smoke: bool = False, model: str | None = None):
    from rl_bk.experiments.task_config import load_task

    task = load_task(GPU_TASK, smoke=smoke)
    if model is not None:
        task = task.model_copy(update={"glam": task.glam.model_copy(update={"model": model})})
    return task


def test_gpu_recipe_asks_for_one_gpu_shared_by_learner_and_env_runner(tmp_path):
    from rl_bk.experiments.sweep import build_algorithm_config, resources_for

    task = gpu_task(model=save_tiny_model(tmp_path))
    config = build_algorithm_config(task, GLAM_TRIAL)
    config.validate()
    assert (config.num_learners, config.num_gpus_per_learner) == (0, 0.5)
    assert (config.num_env_runners, config.num_gpus_per_env_runner) == (1, 0.5)
    assert config.get_default_rl_module_spec().model_config["lora"] == {"r": 16, "alpha": 32}
    bundles = resources_for(task)(GLAM_TRIAL).bundles
    assert sum(b.get("GPU", 0) for b in bundles) == 1.0
    # The symbolic PPO baseline of the same task asks for no GPU.
    ppo = {"variant": {"method": "ppo", "params": {}}, "seed": 0}
    assert sum(b.get("GPU", 0) for b in resources_for(task)(ppo).bundles) == 0


def test_gpu_recipe_without_its_model_folder_stops_before_any_trial(tmp_path):
    from rl_bk.experiments.sweep import resources_for

    task = gpu_task(model=str(tmp_path / "SmolLM2-1.7B-Instruct"))
    with pytest.raises(ValueError, match=r"SmolLM2-1\.7B-Instruct.*does not exist"):
        resources_for(task)(GLAM_TRIAL)  # what tune_run.py asks first, on the driver


def test_gpu_recipe_smoke_runs_the_same_layout_on_the_cpu():
    from rl_bk.experiments.sweep import build_algorithm_config, resources_for

    task = gpu_task(smoke=True)
    assert task.glam.model == "tiny" and task.env_runners.num_env_runners == 1
    config = build_algorithm_config(task, GLAM_TRIAL)
    config.validate()
    assert config.num_gpus_per_learner == 0 and config.num_gpus_per_env_runner == 0
    assert sum(b.get("GPU", 0) for b in resources_for(task)(GLAM_TRIAL).bundles) == 0


# --------------------------------------------------------------------------------------------
# The prompt wrapper
# --------------------------------------------------------------------------------------------
def as_observation(caption: str) -> str:
    assert caption.endswith(".")
    return caption[:-1].replace(". ", ", ")


HEADER = "Possible actions of the agent: turn left, turn right, go forward, pick up, drop, toggle"


def test_prompt_after_reset_and_steps():
    env = GLAMPromptObservation(env_registry.make_env("BabyAI-Text-GoToLocal-RedBall-S20-v0"))
    obs, info = env.reset(seed=0)
    assert decode_prompts(obs[None]) == [env.prompt]
    assert env.prompt == (
        f"{HEADER}\nGoal of the agent: go to the red ball\n"
        "Observation 0: You see a purple box 3 steps forward, "
        "You see a blue key 2 steps right and 4 steps forward\nAction 0:"
    )
    captions = [info["caption"]]
    for action in (2, 0, 1):
        obs, *_, info = env.step(action)
        captions.append(info["caption"])
    c = [as_observation(x) for x in captions]
    # Three observations kept: the reset's has gone; the actions between them are kept.
    expected = (
        f"{HEADER}\nGoal of the agent: go to the red ball\n"
        f"Observation 0: {c[1]}\nAction 0: turn left\n"
        f"Observation 1: {c[2]}\nAction 1: turn right\n"
        f"Observation 2: {c[3]}\nAction 2:"
    )
    assert decode_prompts(obs[None]) == [expected]
    assert env.observation_space.contains(obs) and env.action_space == gym.spaces.Discrete(6)


def test_two_steps_prompt_and_byte_round_trip():
    env = GLAMPromptObservation(env_registry.make_env("BabyAI-Text-GoToLocal-RedBall-S20-v0"))
    _, info = env.reset(seed=3)
    captions = [info["caption"]]
    for action in (2, 2):
        obs, *_, info = env.step(action)
        captions.append(info["caption"])
    c = [as_observation(x) for x in captions]
    expected = (
        f"{HEADER}\nGoal of the agent: {info['mission']}\n"
        f"Observation 0: {c[0]}\nAction 0: go forward\n"
        f"Observation 1: {c[1]}\nAction 1: go forward\n"
        f"Observation 2: {c[2]}\nAction 2:"
    )
    assert decode_prompts(obs) == [expected]  # a 1-D array is one prompt
    assert obs.dtype == np.uint8 and obs.shape == (1024,) and obs[len(expected) :].sum() == 0
    both = np.stack([obs, encode_prompt("héllo", 1024)])
    assert decode_prompts(torch.from_numpy(both)) == [expected, "héllo"]


class FakeTextEnv(gym.Env):
    """Captions of a chosen length; action 2 at the third step succeeds with reward 0.7."""

    def __init__(self, caption_words: int = 5):
        self.observation_space = gym.spaces.Box(0.0, 1.0, (2,), np.float32)
        self.action_space = gym.spaces.Discrete(7)
        self.words = caption_words
        self.t = 0

    def _info(self) -> dict:
        words = " ".join(f"w{self.t}x{i}" for i in range(self.words))
        return {
            "caption": f"You see {words}. Step {self.t}.",
            "mission": "go to the red ball",
            "success": False,
            "extra": 1,
        }

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return np.zeros(2, np.float32), self._info()

    def step(self, action):
        self.t += 1
        success = self.t == 3 and int(action) == 2
        info = {**self._info(), "success": success}
        return np.zeros(2, np.float32), 0.7 if success else 0.0, success, False, info


def test_reward_is_scaled_on_success_and_info_kept():
    env = GLAMPromptObservation(FakeTextEnv())
    env.reset(seed=0)
    for _ in range(2):
        _, reward, terminated, _, info = env.step(2)
        assert reward == 0.0 and not terminated and info["env_reward"] == 0.0
    _, reward, terminated, _, info = env.step(2)
    assert terminated and info["success"] and info["extra"] == 1
    assert reward == pytest.approx(14.0) and info["env_reward"] == pytest.approx(0.7)


def test_left_truncation_drops_old_observations_never_the_goal():
    env = GLAMPromptObservation(FakeTextEnv(caption_words=20), max_prompt_bytes=500)
    env.reset(seed=0)
    for _ in range(3):
        obs, *_ = env.step(1)
    (prompt,) = decode_prompts(obs[None])
    lines = prompt.split("\n")
    assert lines[:2] == [HEADER, "Goal of the agent: go to the red ball"]
    assert len(prompt.encode()) <= 500 and lines[-1] == "Action 1:"  # 2 of 3 observations fit
    assert lines[2].startswith("Observation 0: You see w2x0") and "Step 3" in lines[-2]
    # Even the newest observation alone too long: its text is cut from the left.
    env = GLAMPromptObservation(FakeTextEnv(caption_words=100), max_prompt_bytes=300)
    obs, _ = env.reset(seed=0)
    (prompt,) = decode_prompts(obs[None])
    assert prompt.startswith(f"{HEADER}\nGoal of the agent: go to the red ball\nObservation 0: ")
    assert prompt.endswith("w0x99, Step 0\nAction 0:") and len(prompt.encode()) == 300


@pytest.mark.filterwarnings("ignore:.*different from the unwrapped")
def test_wrapper_passes_gymnasiums_env_checker():
    from gymnasium.utils.env_checker import check_env

    inner = env_registry.make_env("BabyAI-Text-GoToLocal-RedBall-S20-v0")
    check_env(GLAMPromptObservation(inner), skip_render_check=True)


def test_register_glam_env():
    from ray.tune.registry import ENV_CREATOR, _global_registry

    name = register_glam_env("BabyAI-Text-GoToRedBallNoDists-v0", n_obs=2, max_prompt_bytes=512)
    assert name == "BabyAI-Text-GoToRedBallNoDists-v0+glam"
    env = _global_registry.get(ENV_CREATOR, name)({})
    assert isinstance(env, GLAMPromptObservation) and env.observation_space.shape == (512,)
    assert env.n_obs == 2 and env.reward_scale == 20.0
