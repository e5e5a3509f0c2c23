"""Experiment YAMLs, one per task: ``<task>.yaml``. Files starting with ``_`` are shared bases
that tasks ``extends:``. The schema is ``rl_bk.experiments.task_config.TaskConfig``."""
