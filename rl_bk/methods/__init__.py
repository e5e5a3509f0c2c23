"""rl-bk's methods, one folder per family (``bk``, ``ellm``, ``oni``, ``ptgm``, ``glam``,
``rnd``, ``bc``, and the plain ``ppo`` baseline). A folder holds everything that is only that
family's: ``settings.py`` (each parameter declared once, with its default and meaning, and the
task-file sections it adds, ``TASK_SECTIONS``), the RLlib config that takes those settings, its
reward terms, RLModules and knowledge builders, and ``method.py``, the declarations
:mod:`rl_bk.methods.registry` collects. What every family shares (the PPO and APPO bases,
learner connectors, callbacks) lives outside this package.
"""

#: The method families, by folder name, in the order ``tune_run.py --list`` shows their
#: methods: a new family is its folder and its name here, nothing else outside the folder.
FAMILIES = ("ppo", "rnd", "bk", "ellm", "oni", "ptgm", "bc", "glam", "count_bonus")
