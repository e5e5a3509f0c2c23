"""A quiet console for the main job: Ray's warnings that tell a user nothing they can act on
are not shown, unless ``RLBK_VERBOSE=1``.

What is hidden: RLlib's "You are running PPO on the new API stack!" (this project uses only
the new stack), its deprecation notice for ``RLModule(config=...)`` (raised inside RLlib's
own module construction), and the ``SystemExit`` an env runner's ``__del__`` raises while its
actor shuts down (Python prints it as "Exception ignored in ... EnvRunner.__del__"). Every
other warning and error still shows. :func:`quiet_worker` is the Ray runtime env's
``worker_process_setup_hook``, so trial and env-runner processes are quiet too.
"""

from __future__ import annotations

import logging
import os
import sys

#: Loggers whose warnings are noise for a user of this project (errors still show).
NOISY_LOGGERS = ("ray._common.deprecation", "ray.rllib.algorithms.algorithm_config")
WORKER_SETUP_HOOK = "rl_bk.console.quiet_worker"


def verbose() -> bool:
    return os.environ.get("RLBK_VERBOSE", "") not in ("", "0")


def _ignore_actor_teardown(unraisable) -> None:
    """Drops the SystemExit an actor's ``__del__`` raises on shutdown; shows the rest."""
    if isinstance(unraisable.exc_value, SystemExit) and "__del__" in repr(unraisable.object):
        return
    sys.__unraisablehook__(unraisable)


def quiet_ray_logs() -> None:
    """Hides the noise in this process (nothing with ``RLBK_VERBOSE=1``)."""
    if verbose():
        return
    for name in NOISY_LOGGERS:
        logging.getLogger(name).setLevel(logging.ERROR)
    sys.unraisablehook = _ignore_actor_teardown


def quiet_worker() -> None:
    """Ray's ``worker_process_setup_hook``: each worker process hides the same noise."""
    quiet_ray_logs()
