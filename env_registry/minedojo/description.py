"""What an LLM is told about MineDojo: :data:`LABELER_DESCRIPTION`, one line in every
labelling prompt (goals, preference, helpful), so that a model knows which game it judges.
MineDojo's goal vocabulary is open, so the goals prompt shows no examples."""

from __future__ import annotations

LABELER_DESCRIPTION = "Minecraft: gather resources, craft tools and survive."
