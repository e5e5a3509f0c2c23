"""Online labelling: labels asked for and received while training goes on (ONI, ELLM)."""

from rl_bk.online_labels.labeler_spec import LabelerSpec
from rl_bk.online_labels.queue import AsyncLabelQueue

__all__ = ["AsyncLabelQueue", "LabelerSpec"]
