"""rl-bk: reinforcement learning with background knowledge from large language models.

Sub-packages follow the data flow: ``experiments`` (task configs, methods and the results of
a Tune run), ``callbacks`` (RLlib callbacks that log what researchers compare). Environments,
with their captioners (observation → text), live in the top-level ``env_registry`` package,
one package per family; Serve apps in ``serve_deployments``, experiment YAMLs in
``tune_configs``.
"""

__version__ = "0.1.0"
