"""MineDojo-Text: the missing-dependency messages, and the adapter's pure parts.

MineDojo itself cannot run here (JDK 8, network, display); these tests pin down what a user
sees when it is missing, and the caption and observation code that does not need it.
"""

from __future__ import annotations

import sys
import types

import numpy as np
import pytest

import env_registry
from env_registry.errors import MissingDependencyError
from env_registry.minedojo import env as fam
from env_registry.minedojo.captioner import caption_minedojo

MINEDOJO_NAMES = [spec.name for spec in fam.SPECS]


def test_names_and_limits():
    assert MINEDOJO_NAMES == [
        "MineDojo-Text-LogPlains-v0",
        "MineDojo-Text-WaterBucket-v0",
        "MineDojo-Text-Cobblestone-v0",
        "MineDojo-Text-IronOre-v0",
        "MineDojo-Text-Spider-v0",
    ]
    limits = [spec.defaults["max_episode_steps"] for spec in fam.SPECS]
    assert limits == [2000, 2000, 500, 2000, 500]


@pytest.mark.parametrize("name", MINEDOJO_NAMES)
def test_missing_minedojo_says_how_to_install(monkeypatch, name):
    monkeypatch.setitem(sys.modules, "minedojo", None)  # `import minedojo` raises ImportError
    with pytest.raises(MissingDependencyError) as err:
        env_registry.make_env(name)
    message = str(err.value)
    assert fam.MINEDOJO_INSTALL in message
    assert "pip install --no-build-isolation gym==0.21.0" in message
    assert "JDK 8" in message and "Temurin" in message
    assert "network" in message and "MINEDOJO_HEADLESS=1" in message


def test_real_import_failure_is_wrapped():
    try:
        import minedojo  # noqa: F401
    except Exception:
        pass
    else:
        pytest.skip("minedojo is importable here")
    with pytest.raises(MissingDependencyError) as err:
        env_registry.make_env("MineDojo-Text-LogPlains-v0")
    assert fam.MINEDOJO_INSTALL in str(err.value)


@pytest.fixture
def fake_minedojo(monkeypatch):
    module = types.ModuleType("minedojo")
    monkeypatch.setitem(sys.modules, "minedojo", module)
    return module


def test_minedojo_without_java(monkeypatch, fake_minedojo):
    monkeypatch.setattr(fam.shutil, "which", lambda _: None)
    with pytest.raises(MissingDependencyError) as err:
        env_registry.make_env("MineDojo-Text-Spider-v0")
    message = str(err.value)
    assert "Java 8 is missing" in message and "no `java` on PATH" in message
    assert "JDK 8" in message and "Zulu" in message


def test_minedojo_with_java_17(monkeypatch, fake_minedojo):
    monkeypatch.setattr(fam.shutil, "which", lambda _: "/usr/lib/jvm/java-17/bin/java")
    monkeypatch.setattr(
        fam, "_java_version_output", lambda _: 'openjdk version "17.0.9" 2023-10-17\n'
    )
    with pytest.raises(MissingDependencyError, match=r"is version 17\b.*JDK 8"):
        env_registry.make_env("MineDojo-Text-IronOre-v0")


def test_minedojo_with_java_8_passes_the_check(monkeypatch, fake_minedojo):
    monkeypatch.setattr(fam.shutil, "which", lambda _: "/opt/zulu8/bin/java")
    monkeypatch.setattr(fam, "_java_version_output", lambda _: 'openjdk version "1.8.0_392"\n')
    assert fam.require_minedojo() is fake_minedojo


@pytest.mark.parametrize(
    ("output", "major"),
    [
        ('java version "1.8.0_392"', 8),
        ('openjdk version "17.0.9" 2023-10-17', 17),
        ('openjdk version "11" 2018-09-25', 11),
        ("bash: java: command not found", None),
    ],
)
def test_java_major_version(output, major):
    assert fam.java_major_version(output) == major


def test_caption():
    caption = caption_minedojo(
        ["air", "log", "leaves", "log", "grass"], {"log": 2}, "bucket", 20, 18
    )
    assert caption == (
        "You see log, leaves and grass nearby. You hold a bucket. You have 2 log. "
        "Health 20/20, food 18/20."
    )
    assert caption_minedojo(["air"] * 27, {}, "air", 20, 20) == (
        "You see only air nearby. Your inventory is empty. Health 20/20, food 20/20."
    )


def test_symbolic_observation_layout():
    blocks = np.array(["air"] * 27, dtype=object)
    blocks[0], blocks[13] = "iron ore", "cobblestone"
    obs = {
        "voxels": {"block_name": blocks.reshape(3, 3, 3)},
        "inventory": {
            "name": np.array(["stone pickaxe", "air", "cobblestone", "cobblestone"]),
            "quantity": np.array([1, 0, 32, 16]),
        },
        "life_stats": {
            "life": np.array([10.0]),
            "food": np.array([20.0]),
            "oxygen": np.array([300.0]),
        },
        "location_stats": {
            "pitch": np.array([45.0]),
            "yaw": np.array([90.0]),
            "light_level": np.array([15]),
            "can_see_sky": np.array([True]),
            "is_raining": np.array([False]),
        },
    }
    x = fam.symbolic_observation(obs)
    assert x.shape == (fam.OBS_SIZE,) == (290,) and x.dtype == np.float32
    voxels = x[:270].reshape(27, len(fam.BLOCK_CLASSES))
    assert np.all(voxels.sum(axis=1) == 1.0)
    assert voxels[0, fam.BLOCK_CLASSES.index("iron_ore")] == 1.0
    assert voxels[13, fam.BLOCK_CLASSES.index("cobblestone")] == 1.0
    items = dict(zip(fam.TRACKED_ITEMS, x[270:281], strict=True))
    assert items["cobblestone"] == pytest.approx(48 / 64) and items["stone_pickaxe"] == 1 / 64
    assert x[281:].tolist() == pytest.approx([0.5, 1.0, 1.0, 0.5, 1.0, 0.0, 1.0, 1.0, 0.0])


def test_discrete_actions_map_to_minedojo_vectors():
    # forward moves, camera 12 means "no turn", attack is functional action 3
    np.testing.assert_array_equal(fam.minedojo_action(1), [1, 0, 0, 12, 12, 0, 0, 0])
    names = [name for name, _ in fam.DISCRETE_ACTIONS]
    np.testing.assert_array_equal(fam.minedojo_action(names.index("attack"))[5], 3)
    assert len(set(names)) == len(names)
    assert all(len(v) == 8 for _, v in fam.DISCRETE_ACTIONS)
    with pytest.raises(ValueError, match="out of range"):
        fam.minedojo_action(len(fam.DISCRETE_ACTIONS))
