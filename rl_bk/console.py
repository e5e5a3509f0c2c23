"""A quiet console for the main job: Ray's warnings that tell a user nothing they can act on
are not shown (:func:`quiet_ray_logs` says which), unless ``RLBK_VERBOSE=1``; every other
warning and error still shows. :func:`quiet_worker` is the Ray runtime env's
``worker_process_setup_hook``, so trial and env-runner processes are quiet too.
"""

from __future__ import annotations

import logging
import os
import sys

#: Loggers whose messages below a level are noise for a user of this project: RLlib's
#: deprecation notices and new-API-stack banner, Tune's "install gputil" and "setup took N s",
#: and a line per checkpoint written (warnings about storage still show).
NOISY_LOGGERS = {
    "ray._common.deprecation": logging.ERROR,
    "ray.rllib.algorithms.algorithm_config": logging.ERROR,
    "ray.tune.utils.util": logging.ERROR,
    "ray.tune.trainable.trainable": logging.WARNING,
    "ray.train._internal.storage": logging.WARNING,
}
WORKER_SETUP_HOOK = "rl_bk.console.quiet_worker"


def verbose() -> bool:
    return os.environ.get("RLBK_VERBOSE", "") not in ("", "0")


def _ignore_actor_teardown(unraisable) -> None:
    """Drops the SystemExit an actor's ``__del__`` raises on shutdown; shows the rest."""
    if isinstance(unraisable.exc_value, SystemExit) and "__del__" in repr(unraisable.object):
        return
    sys.__unraisablehook__(unraisable)


def quiet_ray_logs() -> None:
    """Hides the noise in this process (nothing with ``RLBK_VERBOSE=1``): RLlib's "You are
    running PPO on the new API stack!" (this project uses only the new stack), its deprecation
    notice for ``RLModule(config=...)`` (raised inside RLlib's own module construction), Tune's
    notes on gputil, slow setups and each checkpoint written, and the ``SystemExit`` an env
    runner's ``__del__`` raises while its actor shuts down (Python prints it as "Exception
    ignored in ... EnvRunner.__del__")."""
    if verbose():
        return
    for name, level in NOISY_LOGGERS.items():
        logging.getLogger(name).setLevel(level)
    sys.unraisablehook = _ignore_actor_teardown


def quiet_worker() -> None:
    """Ray's ``worker_process_setup_hook``: each worker process hides the same noise."""
    quiet_ray_logs()
