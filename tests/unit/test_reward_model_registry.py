"""Reward models on disk: save, resolve versions, load, score; errors that list what exists."""

import time

import pytest
import torch

from rl_bk.reward_models.registry import (
    RewardModelNotFound,
    list_reward_models,
    load_reward_model,
    save_reward_model,
)
from rl_bk.reward_models.scoring import RewardModels


class Doubler(torch.nn.Module):
    def __init__(self, scale: float):
        super().__init__()
        self.scale = scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.scale * x.sum(dim=1)


def test_save_load_and_latest(tmp_path):
    save_reward_model(Doubler(2.0), "pot", "v1", kind="potential", input_dim=3, root=tmp_path)
    time.sleep(0.01)
    save_reward_model(Doubler(3.0), "pot", "v2", kind="potential", input_dim=3, root=tmp_path)
    module, meta = load_reward_model("pot", "latest", tmp_path)
    assert meta.version == "v2" and module(torch.ones(1, 3)).item() == pytest.approx(9.0)
    assert load_reward_model("pot", "v1", tmp_path)[1].version == "v1"
    assert {m.version for m in list_reward_models(tmp_path)} == {"v1", "v2"}


def test_errors_name_what_exists(tmp_path):
    save_reward_model(Doubler(1.0), "pot", "v1", kind="potential", input_dim=2, root=tmp_path)
    with pytest.raises(RewardModelNotFound, match="available: pot"):
        load_reward_model("nope", root=tmp_path)
    with pytest.raises(RewardModelNotFound, match="versions: v1"):
        load_reward_model("pot", "v9", tmp_path)
    with pytest.raises(FileExistsError, match="pick a new version"):
        save_reward_model(Doubler(1.0), "pot", "v1", kind="potential", input_dim=2, root=tmp_path)
    with pytest.raises(ValueError, match="use letters"):
        save_reward_model(Doubler(1.0), "../x", "v1", kind="potential", input_dim=2, root=tmp_path)


def test_scoring_checks_the_input_width(tmp_path):
    save_reward_model(Doubler(2.0), "pot", "v1", kind="potential", input_dim=2, root=tmp_path)
    models = RewardModels(str(tmp_path))
    assert models.score("pot", "v1", [[1.0, 2.0], [0.0, 0.5]]) == pytest.approx([6.0, 1.0])
    with pytest.raises(ValueError, match="reads 2 values per input, got shape"):
        models.score("pot", "v1", [[1.0, 2.0, 3.0]])


def test_http_route_scores_and_rejects_bad_bodies(tmp_path):
    from fastapi.testclient import TestClient

    from serve_deployments.reward_model import create_app

    save_reward_model(Doubler(1.0), "pot", "v1", kind="potential", input_dim=2, root=tmp_path)
    models = RewardModels(str(tmp_path))
    app = create_app()

    async def score(name, version, inputs):
        return models.score(name, version, inputs)

    app.state.models, app.state.score = models, score
    http = TestClient(app, raise_server_exceptions=False)
    ok = http.post("/v1/reward_models/pot/v1/score", json={"inputs": [[1.0, 2.0]]})
    assert ok.status_code == 200 and ok.json()["rewards"] == [3.0]
    assert http.post("/v1/reward_models/pot/v1/score", json={}).status_code == 422
    assert http.post("/v1/reward_models/pot/v1/score", json={"inputs": [["a"]]}).status_code == 422
    wrong = http.post("/v1/reward_models/pot/v1/score", json={"inputs": [[1.0]]})
    assert wrong.status_code == 422 and "reads 2 values" in wrong.json()["error"]["message"]
    missing = http.post("/v1/reward_models/nope/v1/score", json={"inputs": [[1.0, 2.0]]})
    assert missing.status_code == 404 and "available: pot" in missing.json()["error"]["message"]
    assert http.get("/v1/reward_models").json()[0]["name"] == "pot"
