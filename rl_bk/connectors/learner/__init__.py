"""Learner-side connector pieces: they work on the train batch, once per update."""
