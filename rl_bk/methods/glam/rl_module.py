"""GLAM's policy and value function: a causal LLM scores each action text given the prompt
(GLAM's ``LogScoringModuleFn``: ``score(a) = Σ_j log p(a_j | p, a_<j)``, the policy a
categorical over the scores), and GLAM's ``ValueHeadModuleFn`` reads the final hidden state of
the prompt's last token. One prompt pass and a short action pass per batch, and under LoRA a
weight sync that leaves the frozen LM out: docs/methods.md#glams-module.
"""

from __future__ import annotations

import math
from typing import Any

import torch
from peft import LoraConfig, get_peft_model
from ray.rllib.core.columns import Columns
from ray.rllib.core.rl_module.apis import ValueFunctionAPI
from ray.rllib.core.rl_module.torch import TorchRLModule
from ray.rllib.utils.annotations import override
from ray.rllib.utils.numpy import convert_to_numpy
from ray.rllib.utils.torch_utils import convert_to_torch_tensor
from ray.rllib.utils.typing import StateDict
from torch import nn

from rl_bk.methods.glam.language_model import load_causal_lm
from rl_bk.methods.glam.prompt_observation import ACTION_TEXTS, decode_prompts

#: LoRA settings used when ``lora`` is a dict that leaves some out (r 16, alpha 32: lamorel's
#: example). Dropout 0 keeps the train-mode scores equal to the ones the env runners acted on,
#: so PPO's first ratio is 1. ``target_modules`` None: peft's choice for the architecture.
LORA_DEFAULTS: dict[str, Any] = {"r": 16, "alpha": 32, "dropout": 0.0, "target_modules": None}

#: The weight-sync state's entry for :meth:`GLAMTorchRLModule._fingerprint` of the frozen
#: weights it leaves out: a runner whose own copy differs refuses the state.
FROZEN_FINGERPRINT = "glam_frozen_fingerprint"

GLAM_MODEL_DEFAULTS: dict[str, Any] = {
    "model": "tiny",
    "action_texts": list(ACTION_TEXTS),
    "action_prefix": " ",
    "lora": None,
    "max_prompt_tokens": 512,
    "value_hidden": 1024,
    "value_chunk": 64,
    "dtype": "float32",
    "float32_matmul_precision": "highest",
    "seed": 0,
}

#: torch.set_float32_matmul_precision's values.
MATMUL_PRECISIONS = ("highest", "high", "medium")


class GLAMTorchRLModule(TorchRLModule, ValueFunctionAPI):
    """An LLM policy over text actions, with GLAM's value head: for a prompt p and an action
    text a of tokens a_1..a_n::

        score(a) = Σ_j log p(a_j | p, a_<j)        π(· | p) = Categorical(logits = scores)

    The value is GLAM's ``ValueHeadModuleFn``: Linear(h, 1024) → Sigmoid → Linear(1024, 1024)
    → Sigmoid → Linear(1024, 1) on the final hidden state of the prompt's last token.
    model_config keys: :data:`GLAM_MODEL_DEFAULTS`.
    """

    @override(TorchRLModule)
    def setup(self) -> None:
        given = dict(self.model_config or {})
        cfg = {**GLAM_MODEL_DEFAULTS, **{k: given[k] for k in GLAM_MODEL_DEFAULTS if k in given}}
        self.glam_config = cfg
        texts = [str(t) for t in cfg["action_texts"]]
        n = getattr(self.action_space, "n", None)
        if n is not None and n != len(texts):
            raise ValueError(
                f"GLAM has {len(texts)} action texts for an action space of "
                f"{n} actions: give model_config['action_texts'], one per "
                "action"
            )
        self.action_texts = texts
        self.max_prompt_tokens = int(cfg["max_prompt_tokens"])
        self.value_chunk = max(1, int(cfg["value_chunk"]))
        if cfg["float32_matmul_precision"] not in MATMUL_PRECISIONS:
            raise ValueError(
                f"float32_matmul_precision must be one of {MATMUL_PRECISIONS}, "
                f"got {cfg['float32_matmul_precision']!r}"
            )
        # Process-wide, and set here because the learner and each env runner build the
        # module in a process of their own: nothing else in them multiplies float32 matrices.
        torch.set_float32_matmul_precision(cfg["float32_matmul_precision"])
        self.lm, self.tokenizer = load_causal_lm(
            str(cfg["model"]), seed=int(cfg["seed"]), dtype=getattr(torch, cfg["dtype"])
        )
        self.tokenizer.padding_side = "left"
        self.tokenizer.truncation_side = "left"
        if cfg["lora"] is not None:
            self.lm = _with_lora(self.lm, cfg["lora"])
        # Taken here, on the CPU, before RLlib moves the module to its device.
        self.frozen_fingerprint = self._fingerprint(self.frozen_state_keys())

        ids = [
            self.tokenizer(cfg["action_prefix"] + t, add_special_tokens=False)["input_ids"]
            for t in texts
        ]
        if any(len(i) == 0 for i in ids):
            raise ValueError(f"an action text tokenises to nothing: {texts}")
        width = max(len(i) for i in ids)
        pad = self.tokenizer.pad_token_id
        action_ids = torch.tensor([i + [pad] * (width - len(i)) for i in ids], dtype=torch.long)
        action_mask = torch.tensor([[1] * len(i) + [0] * (width - len(i)) for i in ids])
        # Not in the state: rebuilt from the config; buffers so they follow the module's device.
        self.register_buffer("action_ids", action_ids, persistent=False)
        self.register_buffer("action_mask", action_mask, persistent=False)

        hidden, width = _hidden_size(self.lm), int(cfg["value_hidden"])
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(int(cfg["seed"]))
            self.value_head = nn.Sequential(
                nn.Linear(hidden, width),
                nn.Sigmoid(),
                nn.Linear(width, width),
                nn.Sigmoid(),
                nn.Linear(width, 1),
            )

    # ----------------------------------------------------------------------------------------
    def tokenize(self, obs: Any) -> tuple[torch.Tensor, torch.Tensor]:
        """Prompt bytes (B, L) -> left-padded, left-truncated token ids and attention mask."""
        self.tokenizer.padding_side = "left"
        self.tokenizer.truncation_side = "left"
        encoded = self.tokenizer(
            decode_prompts(obs),
            padding=True,
            truncation=True,
            max_length=self.max_prompt_tokens,
            return_tensors="pt",
        )
        device = self.action_ids.device
        return encoded["input_ids"].to(device), encoded["attention_mask"].to(device)

    def prompt_pass(
        self, input_ids: torch.Tensor, attention_mask: torch.Tensor, *, use_cache: bool
    ) -> tuple[torch.Tensor, torch.Tensor, Any]:
        """One LM pass over the prompts: (last-position logits (B, V), last hidden state (B, h),
        the key/value cache or None)."""
        positions = (attention_mask.long().cumsum(-1) - 1).clamp(min=0)
        out = self.lm(
            input_ids=input_ids,
            attention_mask=attention_mask,
            position_ids=positions,
            use_cache=use_cache,
            output_hidden_states=True,
            logits_to_keep=1,
        )
        return out.logits[:, -1], out.hidden_states[-1][:, -1], out.past_key_values

    def score_actions(
        self, input_ids: torch.Tensor, attention_mask: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """(scores (B, A), last prompt-token hidden state (B, h)) for tokenised prompts."""
        logits, hidden, cache = self.prompt_pass(input_ids, attention_mask, use_cache=True)
        actions, mask = self.action_ids, self.action_mask
        n_actions, width = actions.shape
        batch = input_ids.shape[0]
        scores = _token_log_probs(logits, actions[:, 0].expand(batch, n_actions))  # (B, A)
        if width > 1:
            # Every prompt's cache, once per action: rows are (prompt b, action a) at b*A + a.
            cache.batch_repeat_interleave(n_actions)
            inputs = actions[:, :-1].repeat(batch, 1)
            targets = actions[:, 1:].repeat(batch, 1)
            target_mask = mask[:, 1:].repeat(batch, 1)
            full_mask = torch.cat(
                [
                    attention_mask.repeat_interleave(n_actions, dim=0),
                    mask[:, :-1].repeat(batch, 1).to(attention_mask.dtype),
                ],
                dim=1,
            )
            lengths = attention_mask.long().sum(-1).repeat_interleave(n_actions)
            positions = lengths[:, None] + torch.arange(width - 1, device=lengths.device)
            out = self.lm(
                input_ids=inputs,
                attention_mask=full_mask,
                position_ids=positions,
                past_key_values=cache,
                use_cache=True,
            )
            rest = _token_log_probs(out.logits, targets[..., None]).squeeze(-1) * target_mask
            scores = scores + rest.sum(-1).view(batch, n_actions)
        return scores, hidden

    # ----------------------------------------------------------------------------------------
    def frozen_state_keys(self) -> set[str]:
        """State-dict keys of the parameters nothing trains: under LoRA, the pretrained LM's
        own weights (every name a tied weight goes by: SmolLM2 ties its embeddings to its
        output layer). Empty when the whole LM is fine-tuned."""
        return {
            name for name, p in self.named_parameters(remove_duplicate=False) if not p.requires_grad
        }

    @override(TorchRLModule)
    def get_state(
        self,
        components: Any = None,
        *,
        not_components: Any = None,
        inference_only: bool = False,
        **kwargs: Any,
    ) -> StateDict:
        """The module's state; with ``inference_only`` (what RLlib syncs to env runners after
        each update), without the frozen weights every module loads for itself."""
        if not inference_only:
            return super().get_state(components, not_components=not_components, **kwargs)
        frozen = self.frozen_state_keys()
        state = convert_to_numpy({k: v for k, v in self.state_dict().items() if k not in frozen})
        if frozen:
            state[FROZEN_FINGERPRINT] = self.frozen_fingerprint
        return state

    @override(TorchRLModule)
    def set_state(self, state: StateDict) -> None:
        """Loads a state from :meth:`get_state`: a whole one (a checkpoint), or one without
        the frozen weights (a weight sync), which this module then keeps as it built them.
        Anything else missing, a key this module does not have, or frozen weights other than
        the sender's (their fingerprint) is an error: the sender's model or LoRA settings
        differ from this module's."""
        state = dict(state)
        fingerprint = state.pop(FROZEN_FINGERPRINT, None)
        own = self.state_dict()
        unexpected = sorted(set(state) - set(own))
        missing = sorted(set(own) - set(state) - self.frozen_state_keys())
        if unexpected or missing:
            raise ValueError(
                f"GLAM module state does not fit this module (model {self.glam_config['model']!r}"
                f", lora {self.glam_config['lora']!r}): missing {_some(missing)}, unexpected "
                f"{_some(unexpected)}; learner and env runners must build the same model"
            )
        if fingerprint is not None and not math.isclose(
            fingerprint, self.frozen_fingerprint, rel_tol=1e-6
        ):
            raise ValueError(
                f"the frozen weights of this module's LLM ({self.glam_config['model']!r}) are "
                f"not the sender's (fingerprints {fingerprint!r} and "
                f"{self.frozen_fingerprint!r}): every node must load the same model"
            )
        # RLlib's set_state would refuse an inference-only module's missing (frozen) keys.
        self.load_state_dict(convert_to_torch_tensor(state), strict=False)
        frozen = self.frozen_state_keys()
        if frozen & set(state):  # a whole state (a checkpoint) may bring other frozen weights
            self.frozen_fingerprint = self._fingerprint(frozen)

    def _fingerprint(self, keys: set[str]) -> float:
        """A number that changes when the weights under ``keys`` do (each tensor's float64
        sum, weighted by its place in name order); 0.0 for none."""
        params = dict(self.named_parameters(remove_duplicate=False))
        with torch.no_grad():
            return float(
                sum(
                    (i + 1) * params[k].detach().sum(dtype=torch.float64).item()
                    for i, k in enumerate(sorted(keys))
                )
            )

    # ----------------------------------------------------------------------------------------
    @override(TorchRLModule)
    def _forward(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        scores, hidden = self.score_actions(*self.tokenize(batch[Columns.OBS]))
        return {Columns.ACTION_DIST_INPUTS: scores, Columns.EMBEDDINGS: hidden}

    @override(TorchRLModule)
    def _forward_inference(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        """The scores only, without gradients: env runners would otherwise store every
        step's hidden state in the episodes (extra model outputs) for nothing."""
        with torch.no_grad():
            return {Columns.ACTION_DIST_INPUTS: self._forward(batch)[Columns.ACTION_DIST_INPUTS]}

    @override(TorchRLModule)
    def _forward_exploration(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        return self._forward_inference(batch)

    @override(ValueFunctionAPI)
    def compute_values(self, batch: dict[str, Any], embeddings: Any = None) -> torch.Tensor:
        """V(prompt), shape (B,).

        With ``embeddings`` (PPO's loss passes the forward pass's): the value head on them,
        with gradients. Without (RLlib's GAE connector, which only reads the values as
        numbers): the prompt pass alone, no action tokens, ``value_chunk`` prompts at a time
        and under ``torch.no_grad`` (the result has no graph), so the value pass over a whole
        train batch neither keeps an autograd graph of the LLM nor holds all its activations.
        """
        if embeddings is not None:
            return self._value(embeddings)
        obs = batch[Columns.OBS]
        with torch.no_grad():
            parts = [
                self._value(
                    self.prompt_pass(
                        *self.tokenize(obs[i : i + self.value_chunk]), use_cache=False
                    )[1]
                )
                for i in range(0, len(obs), self.value_chunk)
            ]
        return torch.cat(parts) if parts else self.value_head[0].weight.new_zeros(0)

    def _value(self, embeddings: torch.Tensor) -> torch.Tensor:
        return self.value_head(embeddings.to(self.value_head[0].weight.dtype)).squeeze(-1)


def _some(keys: list[str], n: int = 5) -> str:
    """Up to ``n`` keys and how many more, for an error message."""
    more = f" and {len(keys) - n} more" if len(keys) > n else ""
    return (", ".join(keys[:n]) or "none") + more


def _token_log_probs(logits: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
    """log softmax(logits)[tokens] along the last axis, for logits (..., V) and tokens (..., K):
    the picked logits minus the log-normaliser, without materialising a (…, V) log-softmax."""
    logits = logits.float()
    picked = logits.gather(-1, tokens)
    return picked - torch.logsumexp(logits, dim=-1, keepdim=True)


def _hidden_size(model: Any) -> int:
    config = model.config
    if hasattr(config, "get_text_config"):
        config = config.get_text_config()
    return int(config.hidden_size)


def _with_lora(model: Any, lora: dict[str, Any]) -> Any:
    """The model wrapped with LoRA adapters (peft); only the adapters stay trainable."""
    unknown = set(lora) - set(LORA_DEFAULTS)
    if unknown:
        raise ValueError(f"unknown LoRA settings {sorted(unknown)}; valid: {sorted(LORA_DEFAULTS)}")
    settings = {**LORA_DEFAULTS, **lora}
    config = LoraConfig(
        r=int(settings["r"]),
        lora_alpha=settings["alpha"],
        lora_dropout=float(settings["dropout"]),
        target_modules=settings["target_modules"],
        bias="none",
        task_type="CAUSAL_LM",
    )
    return get_peft_model(model, config)
