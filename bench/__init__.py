"""Benchmarks and long studies. Each script runs from the repository root as
``python -m bench.<name>``; the shared modules (``study``, ``paired_rounds``,
``learning_measures``) are imported as ``bench.<module>``."""
