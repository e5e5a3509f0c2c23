"""Reward models learned from LLM labels, and their on-disk registry."""
