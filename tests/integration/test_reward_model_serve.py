"""The reward-model app on Serve: concurrent callers merged into one forward pass per model."""

import pytest
import torch

from rl_bk.reward_models.registry import save_reward_model

pytestmark = pytest.mark.ray


class Summer(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.sum(dim=1)


def test_batched_scoring_through_a_handle(ray_session, tmp_path):
    from ray import serve

    from serve_deployments.reward_model import build_reward_model_app

    save_reward_model(Summer(), "sum", "v1", kind="potential", input_dim=2, root=tmp_path)
    handle = serve.run(
        build_reward_model_app({"root": str(tmp_path)}), name="rewards", route_prefix="/rewards"
    )
    try:
        responses = [handle.score.remote("sum", "v1", [[i, 1.0]]) for i in range(20)]
        assert [r.result() for r in responses] == [[i + 1.0] for i in range(20)]
        passes = handle.forward_passes.remote().result()
        assert passes < 20  # concurrent calls were merged
        with pytest.raises(Exception, match="no reward model 'nope'"):
            handle.score.remote("nope", "v1", [[0.0, 0.0]]).result()
    finally:
        serve.delete("rewards")
