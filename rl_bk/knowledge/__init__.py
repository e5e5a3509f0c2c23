"""What several methods' offline knowledge is built from, shared by them: the trajectory
dataset (:mod:`.trajectory`, :mod:`.dataset`, :mod:`.collect`: BK, Motif, PTGM, BC-PPO and
RND-PPO's precollection) and how offline stages ask for labels (:mod:`.labeler`: BK and
Motif). What only one method uses lives in its folder (BK's builders and potentials:
:mod:`rl_bk.methods.bk`)."""
