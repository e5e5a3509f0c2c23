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
