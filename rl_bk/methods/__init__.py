"""rl-bk's methods, one folder per family (``bk``, ``ellm``, ``oni``, ``ptgm``, ``glam``,
``rnd``, ``bc``, and the plain ``ppo`` baseline). A folder holds everything that is only that
family's: ``settings.py`` (each parameter declared once, with its default and meaning), the
RLlib config that takes those settings, its reward terms, RLModules and knowledge builders,
and ``method.py``, the declarations :mod:`rl_bk.methods.registry` collects. What every family
shares (the PPO and APPO bases, learner connectors, callbacks) lives outside this package.
"""
