"""The plain PPO baseline: RLlib's PPO (or APPO) on the env reward, built from the task's
shared setup (:mod:`rl_bk.experiments.ppo_config`); ``method.py`` declares it."""
