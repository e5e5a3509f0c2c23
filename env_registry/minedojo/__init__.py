"""MineDojo-Text: PTGM's five MineDojo tasks, everything rl-bk knows about them.

- :mod:`.env`: the adapter (it needs MineDojo, JDK 8, network and a display) and its
  registered names (``SPECS``);
- :mod:`.captioner`: the caption of the surroundings, the hand and the inventory.

Nothing is imported here, so that a light module (the captioner) loads without MineDojo.
"""
