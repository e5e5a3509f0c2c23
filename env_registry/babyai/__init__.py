"""BabyAI-Text: minigrid's BabyAI levels and BK's tasks, everything rl-bk knows about them.

- :mod:`.env`: the env, its levels and its registered names (``SPECS``);
- :mod:`.captioner`: the caption of the agent's view;
- :mod:`.vocabulary`: action names and goal words;
- :mod:`.description`: what an LLM is told about the game;
- :mod:`.oracle`: the rule-based oracle's rules, over captions and missions.

Nothing is imported here, so that the modules other than :mod:`.env` and :mod:`.captioner`
(vocabulary, description, oracle: what a labeler reads) load without minigrid.
"""
