"""The reward-model app: trained reward models served by name and version, scored in batches.

    POST /v1/reward_models/{name}/{version}/score   {"inputs": [[...], ...]} or {"texts": [...]}
    GET  /v1/reward_models                          what is on disk
    handle.score.remote(name, version, inputs)      from RLlib connectors (one call per batch)

Concurrent callers (several env runners, several trials) are merged by ``@serve.batch`` and
each model runs one forward pass per merged batch. Models load on first use and stay in
memory; ``version="latest"`` resolves to the newest saved version at load time.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field
from ray import serve

from rl_bk.reward_models.registry import RewardModelNotFound, list_reward_models
from rl_bk.reward_models.scoring import RewardModels

MAX_ITEMS = 4096


class ScoreRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    inputs: list[list[float]] | None = Field(None, min_length=1, max_length=MAX_ITEMS)
    texts: list[str] | None = Field(None, min_length=1, max_length=MAX_ITEMS)


def _error(status: int, message: str) -> JSONResponse:
    return JSONResponse(status_code=status, content={"error": {"message": message}})


def create_app() -> FastAPI:
    app = FastAPI(title="rl-bk reward models", version="1")

    @app.get("/v1/reward_models")
    def models() -> Any:
        return [m.__dict__ for m in list_reward_models(app.state.models.root)]

    @app.post("/v1/reward_models/{name}/{version}/score")
    async def score(name: str, version: str, body: ScoreRequest) -> Any:
        if (body.inputs is None) == (body.texts is None):
            return _error(422, "give exactly one of 'inputs' (vectors) or 'texts' (captions)")
        try:
            rewards = await app.state.score(name, version, body.inputs or body.texts)
        except RewardModelNotFound as err:
            return _error(404, str(err))
        except ValueError as err:
            return _error(422, str(err))
        return {"name": name, "version": version, "rewards": rewards}

    return app


@serve.deployment(name="RewardModelServer")
@serve.ingress()
class RewardModelServer:
    def __init__(self, root: str | None = None):
        self.models = RewardModels(root)

    def __serve_build_asgi_app__(self):
        app = create_app()
        app.state.models, app.state.score = self.models, self.score
        return app

    async def score(self, name: str, version: str, inputs: list) -> list[float]:
        """Rewards for ``inputs`` (vectors, or captions for text models), in order."""
        result = await self._score_batched((name, version, inputs))
        if isinstance(result, Exception):  # one model's error reaches only its own callers
            raise result
        return result

    @serve.batch(max_batch_size=64, batch_wait_timeout_s=0.005)
    async def _score_batched(self, calls: list[tuple[str, str, list]]) -> list[Any]:
        # Merge the calls for each model into one forward pass, then split the results.
        results: list[Any] = [None] * len(calls)
        groups: dict[tuple[str, str], list[int]] = {}
        for i, (name, version, _) in enumerate(calls):
            groups.setdefault((name, version), []).append(i)
        for (name, version), idx in groups.items():
            merged = [x for i in idx for x in calls[i][2]]
            try:
                rewards = self.models.score(name, version, merged)
            except (RewardModelNotFound, ValueError) as err:
                for i in idx:
                    results[i] = err
                continue
            start = 0
            for i in idx:
                n = len(calls[i][2])
                results[i] = rewards[start : start + n]
                start += n
        return results

    def forward_passes(self) -> int:
        return self.models.forward_passes


def build_reward_model_app(args: dict[str, Any]) -> serve.Application:
    return RewardModelServer.options(ray_actor_options={"num_cpus": 0.25}).bind(args.get("root"))


def ensure_reward_model_app(
    root: str | None, app_name: str = "reward_models", num_cpus: float = 0.0
) -> Any:
    """The reward-model app on the connected Ray cluster, started on ``root`` (the registry
    folder) unless one of that name is running; its handle. ``num_cpus`` 0: on one machine
    trials take every CPU (the replica computes unreserved)."""
    from ray.serve.exceptions import RayServeException

    try:
        app = serve.status().applications.get(app_name)
        if app is not None and str(app.status).endswith("RUNNING"):
            return serve.get_app_handle(app_name)
    except RayServeException:
        pass
    serve.start()
    deployment = RewardModelServer.options(ray_actor_options={"num_cpus": num_cpus})
    return serve.run(deployment.bind(root), name=app_name, route_prefix=f"/{app_name}")
