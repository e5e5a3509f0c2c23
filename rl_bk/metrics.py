"""Result keys, declared once: Tune's stop criteria, the results table and the plots use these.

Keys are as they appear in a flattened RLlib result (``"env_runners/success_rate"``).
"""

ENV_STEPS = "num_env_steps_sampled_lifetime"
EPISODE_RETURN_MEAN = "env_runners/episode_return_mean"  # extrinsic: env rewards only
EPISODE_LEN_MEAN = "env_runners/episode_len_mean"
SUCCESS_RATE = "env_runners/success_rate"  # fraction of the last 100 episodes that succeeded
ACHIEVEMENTS_PER_EPISODE = "env_runners/achievements_per_episode"  # Crafter
ACHIEVEMENT_PREFIX = "env_runners/achievement/"  # + name: fraction of episodes unlocking it
GAME_SCORE_MEAN = "env_runners/game_score_mean"  # NetHack: in-game score at episode end
TIME_TOTAL_S = "time_total_s"
EPISODES_LIFETIME = "env_runners/num_episodes_lifetime"
EPISODES_THIS_ITER = "env_runners/num_episodes"  # episodes that ended in this iteration
#: Greedy evaluation (a task's ``evaluation:``, BK's protocol): each report is the mean over
#: that evaluation's own episodes (50 for BK), so no smoothing across reports is needed.
EVAL_PREFIX = "evaluation/"
EVAL_SUCCESS_RATE = EVAL_PREFIX + SUCCESS_RATE
EVAL_RETURN_MEAN = EVAL_PREFIX + EPISODE_RETURN_MEAN
#: The same evaluation's episodes played by the sampled policy (``evaluation.sampled``).
EVAL_SAMPLED_SUCCESS_RATE = EVAL_PREFIX + "env_runners/sampled_success_rate"
EVAL_EPISODES = EVAL_PREFIX + EPISODES_THIS_ITER
#: Present only in the reports of iterations that evaluated (rl_bk/callbacks/episode_metrics.py)
EVAL_TRAINED_ENV_STEPS = EVAL_PREFIX + "trained_env_steps"
#: Episodes behind a smoothed metric (reporting(metrics_num_episodes_for_smoothing=100)): a
#: threshold counts as reached only once the window is full, not on a lucky first episode.
SMOOTHING_EPISODES = 100

#: Metrics a task config may name as its main metric (``metric:`` in tune_configs/*.yaml).
MAIN_METRICS = {
    "success_rate": SUCCESS_RATE,
    "episode_return_mean": EPISODE_RETURN_MEAN,
    "achievements_per_episode": ACHIEVEMENTS_PER_EPISODE,
    "game_score_mean": GAME_SCORE_MEAN,
}
