"""NetHack-Text: ONI's NetHack tasks on nle 1.3.0, everything rl-bk knows about them.

- :mod:`.env`: the env and its registered names (``SPECS``);
- :mod:`.captioner`: the message line plus a status sentence from ``blstats``;
- :mod:`.vocabulary`: goal words;
- :mod:`.description`: what an LLM is told about the game;
- :mod:`.oracle`: the rule-based oracle's rules (message keywords), over captions.

Nothing is imported here, so that the modules other than :mod:`.env` load without nle.
"""
