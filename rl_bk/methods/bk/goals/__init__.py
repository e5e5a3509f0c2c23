"""BK-Goal: goals an LLM suggests for dataset situations, kept as a retrievable goal list;
Phi rewards transitions that read like a goal suggested for similar situations.

- :mod:`.builder`: label segments and build the goal list (``build_goal_list``, ``GoalList``);
- :mod:`.potential`: the goal list as a PotentialSource (``GoalPotential``).
"""
