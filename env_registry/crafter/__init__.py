"""Crafter-Text: crafter 1.8.3 and its single-achievement variants, everything rl-bk knows
about them.

- :mod:`.env`: the env and its registered names (``SPECS``);
- :mod:`.worldgen`: crafter's world generation, vectorised (the same worlds);
- :mod:`.captioner`: the captions, in SmartPlay's and in ELLM's style.

Nothing is imported here, so that a light module (the captioner) loads without the env's
dependencies (crafter, numba).
"""
