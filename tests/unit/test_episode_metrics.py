"""The episode-metrics callback, on hand-made episodes (no Ray)."""

from ray.rllib.env.single_agent_episode import SingleAgentEpisode
from ray.rllib.utils.metrics.metrics_logger import MetricsLogger

from rl_bk.callbacks.episode_metrics import EpisodeMetricsCallback, episode_end_metrics


def finished_episode(last_info):
    ep = SingleAgentEpisode(observations=[0], infos=[{}])
    ep.add_env_step(observation=1, action=0, reward=1.0, infos=last_info, terminated=True)
    return ep


def test_success_and_crafter_achievements():
    m = episode_end_metrics({"success": True, "achievements": {"collect_wood": 2, "eat_cow": 0}})
    assert m == {
        "success_rate": 1.0,
        "achievements_per_episode": 1.0,
        "achievement/collect_wood": 1.0,
        "achievement/eat_cow": 0.0,
    }
    assert episode_end_metrics({})["success_rate"] == 0.0
    assert episode_end_metrics({"score": 12})["game_score_mean"] == 12.0


def test_callback_logs_the_mean_over_episodes():
    logger, callback = MetricsLogger(), EpisodeMetricsCallback()
    for success in (True, False, True, True):
        episode = finished_episode({"success": success})
        callback.on_episode_end(episode=episode, metrics_logger=logger)
    assert logger.peek("success_rate") == 0.75
