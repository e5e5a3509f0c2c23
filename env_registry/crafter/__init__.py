"""Crafter-Text: crafter 1.8.3 and its single-achievement variants, everything rl-bk knows
about them.

- :mod:`.env`: the env and its registered names (``SPECS``);
- :mod:`.worldgen`: crafter's world generation, vectorised (the same worlds);
- :mod:`.captioner`: the captions, in SmartPlay's and in ELLM's style;
- :mod:`.vocabulary`: action names and goal words;
- :mod:`.description`: what an LLM is told about the game;
- :mod:`.oracle`: the rule-based oracle's rules (the tech tree), over captions.

Nothing is imported here, so that the modules other than :mod:`.env` and :mod:`.worldgen`
load without crafter's dependencies (numba, opensimplex).
"""
