"""Background knowledge for reward shaping (BK-Code, BK-Pref, BK-Goal): the trajectory
dataset it is learned from, each way of representing it, and the potentials it yields."""
