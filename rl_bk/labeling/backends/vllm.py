"""The vLLM backend's engine: Ray's own LLM serving (``ray.serve.llm``, deployed by
``serve_deployments/vllm_app.py``) reached over its OpenAI-compatible API.

vLLM 0.32 ignores the older ``guided_grammar`` field, so grammars go in its
``structured_outputs`` field (xgrammar reads GBNF); everything else is the OpenAI client path,
identical for every backend.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rl_bk.labeling.backends.openai_compat import OpenAICompatGenerator


class VLLMGenerator(OpenAICompatGenerator):
    """OpenAICompatGenerator that sends GBNF grammars as vLLM's ``structured_outputs``."""

    def __init__(self, base_url: str, model: str, **kwargs: Any) -> None:
        super().__init__(base_url, model, **kwargs)
        self.supports_grammar = True

    def _body(
        self, max_tokens: int, temperature: float, stop: Sequence[str], grammar: str | None
    ) -> dict[str, Any]:
        body = super()._body(max_tokens, temperature, stop, None)
        if grammar is not None:
            body["structured_outputs"] = {"grammar": grammar}  # xgrammar reads GBNF
        return body
