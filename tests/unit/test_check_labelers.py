"""A sweep whose labellers cannot run here fails before Ray starts, in one line that says
what to do; a sweep without labellers, or with the Serve app labelling, is not held back."""

import sys

import pytest

from env_registry.errors import MissingDependencyError
from rl_bk.experiments.run import check_labelers
from rl_bk.experiments.sweep import expand_variants
from rl_bk.experiments.task_config import load_task


@pytest.fixture
def no_llama_cpp(monkeypatch):
    monkeypatch.setitem(sys.modules, "llama_cpp", None)  # import llama_cpp raises ImportError


def test_a_llamacpp_variant_without_llama_cpp_python_fails_with_the_fix(no_llama_cpp):
    task = load_task("crafter-text-ellm")  # ellm x {oracle, llamacpp}
    with pytest.raises(MissingDependencyError, match=r"setup\.sh --with-llm") as err:
        check_labelers(task, expand_variants(task, list(task.methods)))
    assert "needed by ellm backend=llamacpp;" in str(err.value)


def test_sweeps_that_do_not_label_here_pass(no_llama_cpp):
    task = load_task("crafter-text-ellm")
    check_labelers(task, expand_variants(task, ["ppo", "rnd", "ellm-novelty"]))
    oracle = load_task("babyai-gotolocal-redball-s20")  # bk-* with the oracle labeller
    check_labelers(oracle, expand_variants(oracle, list(oracle.methods)))
    served = task.model_copy(update={"labeler": task.labeler.model_copy(update={"mode": "serve"})})
    check_labelers(served, expand_variants(served, list(served.methods)))  # the app's nodes


def test_an_openai_labeller_without_its_server_fails_before_ray(no_llama_cpp):
    task = load_task("babyai-gotolocal-redball-s20")
    labeler = task.knowledge.labeler.model_copy(update={"backend": "openai"})
    knowledge = task.knowledge.model_copy(update={"labeler": labeler})
    task = task.model_copy(update={"knowledge": knowledge})
    with pytest.raises(ValueError, match="needs --base-url and --model"):
        check_labelers(task, expand_variants(task, ["bk-code"]))


def test_a_run_names_whose_labels_its_online_variants_ask_for(tmp_path):
    # ELLM asks its labeller while it trains: the run's knowledge.json (and so its summary)
    # names the oracle, or the model file by name and the start of its SHA-256.
    import hashlib
    import json

    from rl_bk.experiments.results import whose_knowledge
    from rl_bk.experiments.run import _prepare_knowledge

    model = tmp_path / "tiny.gguf"
    model.write_bytes(b"not really a model")
    task = load_task("crafter-text-ellm")
    labeler = task.knowledge.labeler.model_copy(update={"model_path": str(model)})
    task = task.model_copy(
        update={"knowledge": task.knowledge.model_copy(update={"labeler": labeler})}
    )
    variants = expand_variants(task, ["ellm"])
    _prepare_knowledge(task, variants, tmp_path)
    used = json.loads((tmp_path / "knowledge.json").read_text())
    digest = hashlib.sha256(b"not really a model").hexdigest()[:12]
    assert used["ellm backend=llamacpp"]["labels"] == f"llamacpp/tiny.gguf@sha256:{digest}"
    assert used["ellm backend=llamacpp"]["is_oracle"] is False
    assert used["ellm backend=oracle"] == {
        "labels": "oracle/rules-v2",
        "is_oracle": True,
        "asked": "while training",
    }
    summary = whose_knowledge(tmp_path)
    assert f"`ellm backend=llamacpp`: LLM `llamacpp/tiny.gguf@sha256:{digest}`" in summary
    assert "`ellm backend=oracle`: ORACLE" in summary
