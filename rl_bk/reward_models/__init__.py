"""Reward models learned from LLM labels: ONI's and Motif's caption models (char-CNN
classifier and Bradley-Terry ranker, the retrieval table, cosine-BoW, the count decay) and
the on-disk registry the reward-model app serves from."""
