"""NetHack-Text: ONI's NetHack tasks on nle 1.3.0, everything rl-bk knows about them.

- :mod:`.env`: the env and its registered names (``SPECS``);
- :mod:`.captioner`: the message line plus a status sentence from ``blstats``.

Nothing is imported here, so that a light module (the captioner) loads without nle.
"""
