"""Long studies: each a plan file (``studies/plans/<study>.yaml``: tasks, methods, seeds,
budgets, measures, question), run by one driver (``python -m studies.run <study>``) that
writes one report (``studies/results/<study>.md``). Speed and cost benchmarks are in
``bench/``."""
