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
from rl_bk.algorithms.glam_ppo import (
    GLAMPPOConfig,
    GLAMPromptObservation,
    GLAMTorchRLModule,
    load_causal_lm,
    register_glam_env,
)
from rl_bk.algorithms.glam_ppo.prompt_observation import (
    ACTION_TEXTS,
    decode_prompts,
    encode_prompt,
)

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
    lengths = {len(module.tokenizer(" " + a, add_special_tokens=False)["input_ids"])
               for a in ACTIONS}  # fmt: skip
    assert len(lengths) == len(ACTIONS)  # every action has its own token length
    out = module.forward_inference({Columns.OBS: obs_batch(PROMPTS)})
    assert set(out) == {Columns.ACTION_DIST_INPUTS}  # env runners keep no hidden states
    scores = out[Columns.ACTION_DIST_INPUTS]
    assert scores.shape == (len(PROMPTS), len(ACTIONS)) and not scores.requires_grad
    expected = torch.tensor([[direct_score(module.lm, module.tokenizer, p, a) for a in ACTIONS]
                             for p in PROMPTS], dtype=scores.dtype)  # fmt: skip
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
    return (-(ratio * advantages).mean() + 0.5 * ((values - 1.0) ** 2).mean()
            - 0.01 * dist.entropy().mean())  # fmt: skip


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
    assert all(p.grad is not None and p.grad.abs().sum() > 0
               for n, p in lora.items() if "lora_B" in n)  # fmt: skip
    for name, param in module.named_parameters():
        if name.startswith("lm.") and "lora_" not in name:
            assert not param.requires_grad and param.grad is None, name
    assert all(p.grad is not None for p in module.value_head.parameters())


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
    assert spec.model_config == {"model": "tiny", "lora": {"r": 8, "alpha": 32}, "seed": 0,
                                 "max_prompt_tokens": 256}  # fmt: skip
    assert config.training(lora_r=None).glam_model_config()["lora"] is None
    assert (config.clip_param, config.entropy_coeff, config.num_epochs) == (0.2, 0.01, 4)


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
    expected = (f"{HEADER}\nGoal of the agent: go to the red ball\n"
                f"Observation 0: {c[1]}\nAction 0: turn left\n"
                f"Observation 1: {c[2]}\nAction 1: turn right\n"
                f"Observation 2: {c[3]}\nAction 2:")  # fmt: skip
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
    expected = (f"{HEADER}\nGoal of the agent: {info['mission']}\n"
                f"Observation 0: {c[0]}\nAction 0: go forward\n"
                f"Observation 1: {c[1]}\nAction 1: go forward\n"
                f"Observation 2: {c[2]}\nAction 2:")  # fmt: skip
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
        return {"caption": f"You see {words}. Step {self.t}.", "mission": "go to the red ball",
                "success": False, "extra": 1}  # fmt: skip

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
