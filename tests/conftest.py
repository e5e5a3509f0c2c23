import os
import tempfile

import pytest

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("RAY_AIR_NEW_OUTPUT", "0")
# Knowledge a test builds goes to a scratch folder, never the user's cache (Ray workers
# started by the session fixture inherit this).
os.environ.setdefault("RLBK_KNOWLEDGE_DIR", tempfile.mkdtemp(prefix="rlbk-test-knowledge-"))
# Labels asked for during tests (online labelling in trials) go to a scratch store too.
os.environ.setdefault(
    "RLBK_LABEL_STORE", os.path.join(tempfile.mkdtemp(prefix="rlbk-test-labels-"), "labels.sqlite3")
)


@pytest.fixture(scope="session")
def ray_session():
    """One local Ray instance for all integration tests (starting one costs 5-10 s)."""
    import ray

    import env_registry

    ray.init(
        # A Ray of its own, never a cluster some `ray start` left on this machine.
        address="local",
        num_cpus=2,
        include_dashboard=False,
        logging_level="ERROR",
        object_store_memory=256 * 1024**2,
        configure_logging=False,
    )
    env_registry.register_all()
    yield ray
    ray.shutdown()
