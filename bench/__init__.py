"""Speed and cost benchmarks (the long learning studies are in ``studies/``). Each script runs
from the repository root as ``python -m bench.<name>``; the shared modules (``paired_rounds``,
``results_files``) are imported as ``bench.<module>``."""
