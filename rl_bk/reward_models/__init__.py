"""Trained reward models on disk and scoring with them, shared by whoever serves or registers
one: the reward-model app (``serve_deployments/reward_model.py``) serves from the registry,
BK-Pref registers its potential there and scores with it in process, and the sweep's runner
points trials at it. Method-specific nets live with their method (ONI's and Motif's:
:mod:`rl_bk.methods.oni.caption_models`)."""
