"""LLM labels for RL: typed tasks, backends, the persistent label store, the client."""
