"""BK-Pref: an LLM's preferences between trajectory segments, distilled into a Preference
Transformer whose per-state reward is the shaping potential.

- :mod:`.model`: the network, BK's loss, and the TorchScript export the reward-model app serves;
- :mod:`.training`: label segment pairs and train (``train_preference_potential``);
- :mod:`.potential`: the trained model as a PotentialSource (``PreferencePotential``).
"""
