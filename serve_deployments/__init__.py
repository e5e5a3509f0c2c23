"""Ray Serve apps: the LLM labeler and the reward-model server.

Not built yet (the LLM-service issue): this package holds their deployments, configs and
builders once they exist. Nothing in rl-bk imports it today.
"""
