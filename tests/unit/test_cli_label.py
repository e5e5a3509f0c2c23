"""`rl-bk label`: files of captions or requests, labelled in-process with the shared store."""

import importlib.util
import json

from rl_bk.cli import main


def test_label_a_txt_of_captions_with_the_oracle(tmp_path, capsys):
    captions = tmp_path / "captions.txt"
    captions.write_text("You see a red ball 2 steps forward.\nYou see a wall 1 step left.\n")
    out, store = tmp_path / "labels.jsonl", tmp_path / "store.sqlite3"
    args = [
        "label",
        "helpful",
        str(captions),
        "--criteria",
        "go to the red ball",
        "--backend",
        "oracle",
        "--store",
        str(store),
        "--out",
        str(out),
    ]
    assert main(args) == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["label"]["helpful"] for r in rows] == [True, False]
    assert rows[0]["request"]["task"] == "go to the red ball"
    assert store.stat().st_size > 0  # labels went into the store


def test_label_a_jsonl_of_pairs(tmp_path):
    pairs = tmp_path / "pairs.jsonl"
    pair = {
        "segment_a": ["You see a wall 2 steps forward."],
        "segment_b": ["You see a red ball 1 step forward."],
        "criteria": "go to the red ball",
        "env": "babyai",
    }
    pairs.write_text(json.dumps(pair) + "\n")
    out = tmp_path / "out.jsonl"
    assert (
        main(
            [
                "label",
                "preference",
                str(pairs),
                "--backend",
                "oracle",
                "--store",
                str(tmp_path / "s.sqlite3"),
                "--out",
                str(out),
            ]
        )
        == 0
    )
    assert json.loads(out.read_text())["label"] == {"choice": "B"}


def test_user_errors_are_one_line(tmp_path, capsys):
    captions = tmp_path / "c.txt"
    captions.write_text("You see a tree.\n")
    assert (
        main(
            [
                "label",
                "preference",
                str(captions),
                "--backend",
                "oracle",
                "--store",
                str(tmp_path / "s.sqlite3"),
            ]
        )
        == 2
    )
    assert "needs a .jsonl file" in capsys.readouterr().err
    bad = tmp_path / "bad.jsonl"
    bad.write_text("{not json\n")
    assert (
        main(
            [
                "label",
                "helpful",
                str(bad),
                "--backend",
                "oracle",
                "--store",
                str(tmp_path / "s.sqlite3"),
            ]
        )
        == 2
    )
    assert "bad.jsonl:1: not JSON" in capsys.readouterr().err
    assert main(["label", "nope", str(captions), "--backend", "oracle"]) == 2
    assert "unknown labelling task 'nope'" in capsys.readouterr().err


def test_serve_refuses_bad_settings_in_one_line_before_ray_starts(capsys, monkeypatch):
    import ray

    monkeypatch.setattr(ray, "init", lambda *a, **k: (_ for _ in ()).throw(AssertionError))
    assert main(["serve", "--backend", "llamacpp", "--model-path", "/no/such.gguf"]) == 2
    # Without the optional llama-cpp-python (setup.sh without --with-llm) the missing package
    # is what the user must fix first; with it, the missing model file.
    expected = (
        "no GGUF model file at /no/such.gguf"
        if importlib.util.find_spec("llama_cpp")
        else "needs llama-cpp-python: bash scripts/setup.sh --with-llm"
    )
    assert expected in capsys.readouterr().err
    assert main(["serve", "--backend", "openai"]) == 2
    assert "needs --base-url and --model" in capsys.readouterr().err
    assert main(["serve", "--backend", "fake", "--port", "99999"]) == 2
    assert "port" in capsys.readouterr().err
