def compute_potential(window: list[dict]) -> float:
    # Written by hand for bench/bk_hypotheses.py: the task-agnostic oracle's potential without
    # its wasted-action penalty (how close the nearest visible object is: 1 one step away,
    # falling by 0.1 a step, 0 when nothing is in view), to measure what the penalty adds.
    import re

    caption = window[-1]["caption"] if window else ""
    nearest = None
    for sentence in caption.split(". "):
        if re.match(
            r"You see an? (?:(?:open|closed|locked) )?\w+ (?:ball|box|key|door)\b", sentence
        ):
            d = sum(int(n) for n in re.findall(r"(\d+) steps? (?:left|right|forward)", sentence))
            nearest = d if nearest is None else min(nearest, d)
    return 0.0 if nearest is None else max(0.1, 1.0 - (nearest - 1) / 10.0)
