"""MineDojo-Text: PTGM's five MineDojo tasks, everything rl-bk knows about them.

- :mod:`.env`: the adapter (it needs MineDojo, JDK 8, network and a display) and its
  registered names (``SPECS``);
- :mod:`.captioner`: the caption of the surroundings, the hand and the inventory;
- :mod:`.description`: what an LLM is told about the game (its goal words are open:
  no vocabulary, and the oracle has no rules for it).

Nothing is imported here, so that the modules other than :mod:`.env` load without
MineDojo.
"""
