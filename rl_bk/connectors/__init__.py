"""RLlib ConnectorV2 pieces (RLlib's layout: learner/ for the learner pipeline)."""
