"""ONI's and Motif's caption models, learned from LLM labels (ONI: Zheng et al. 2024,
facebookresearch/oni; Motif: Klissarov et al. 2023): the char-CNN encoder over message bytes
and its classifier and Bradley-Terry ranker, cosine-BoW, and the count decay (ONI-Retrieval
needs no model: it reads the label queue, :mod:`..intrinsic_reward`). Only this folder's
methods (oni-* and motif) use them; the on-disk registry the reward-model app serves from is
shared and stays in :mod:`rl_bk.reward_models`."""
