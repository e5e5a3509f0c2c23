"""rl-bk's algorithms: RLlib configs (and thin Algorithm subclasses) built on PPO.

Each subpackage is one method, laid out as RLlib lays out its own algorithms: a config that
wires the learner class, the RLModule spec and the learner connector pieces, so a user only
writes ``XConfig().environment(...).training(...).rl_module(model_config=...)``.
"""
