def compute_potential(window: list[dict]) -> float:
    # Written by hand for bench/bk_hypotheses.py (goal-aware: it names the red ball), the
    # goal-aware oracle's potential minus 1: -steps/10 to the nearest red ball in view, 0 when
    # it is carried, -1 when none is in view. It is <= 0 and peaks at the goal, so under Ng's
    # convention (Phi(terminal) = 0) reaching the ball is not charged.
    import re

    caption = window[-1]["caption"] if window else ""
    if re.search(r"You carry an? red ball\b", caption):
        return 0.0
    value = -1.0
    for sentence in caption.split(". "):
        if sentence.startswith("You see") and re.search(r"\bred ball\b", sentence):
            offsets = re.findall(r"(\d+) steps? (?:left|right|forward)", sentence)
            value = max(value, -sum(int(n) for n in offsets) / 10.0)
    return value
