"""Labelling backends; see ``base.py`` for the two layers (TextGenerator, Backend)."""
