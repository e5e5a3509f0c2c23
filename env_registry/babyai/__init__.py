"""BabyAI-Text: minigrid's BabyAI levels and BK's tasks, everything rl-bk knows about them.

- :mod:`.env`: the env, its levels and its registered names (``SPECS``);
- :mod:`.captioner`: the caption of the agent's view.

Nothing is imported here, so that a light module (the captioner) loads without the env's
dependencies (minigrid).
"""
