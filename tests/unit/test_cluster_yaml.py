"""cluster.yaml passes Ray's own schema check offline; the check itself catches mistakes."""

from pathlib import Path

import pytest
import yaml
from ray.autoscaler._private.util import prepare_config, validate_config

CLUSTER_YAML = Path(__file__).resolve().parents[2] / "cluster.yaml"


def load():
    return yaml.safe_load(CLUSTER_YAML.read_text())


def test_cluster_yaml_is_valid_and_has_head_gpu_and_cpu_workers():
    config = prepare_config(load())
    validate_config(config)
    types = config["available_node_types"]
    assert config["head_node_type"] == "head"
    assert types["gpu_worker"]["node_config"]["InstanceType"].startswith("g")
    assert "cpu_worker" in types
    assert any("scripts/setup.sh" in c for c in config["setup_commands"])


def test_schema_check_rejects_a_typo():
    broken = load()
    broken["available_node_types"]["cpu_worker"]["min_worker"] = 1
    with pytest.raises(Exception, match="min_worker"):
        validate_config(prepare_config(broken))


def test_workers_can_join_and_every_node_sees_the_storage():
    config = load()
    # Token auth is on everywhere, and every node gets the launching machine's token.
    assert config["file_mounts"]["~/.ray/auth_token"] == "~/.ray/auth_token"
    starts = config["head_start_ray_commands"] + config["worker_start_ray_commands"]
    assert all("RAY_AUTH_MODE=token" in c for c in starts if "ray start" in c)
    # Trials go to the workers; results and knowledge to the storage every node reads.
    assert any("--num-cpus=0" in c for c in config["head_start_ray_commands"])
    assert any("RLBK_STORAGE=" in c for c in config["setup_commands"])
    assert config["available_node_types"]["gpu_worker"]["resources"] == {"llm_node": 1}
