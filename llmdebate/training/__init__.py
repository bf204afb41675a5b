"""Training debaters: the A-leading Stackelberg loop over the experiment runner, with TRL.

Needs the ``train`` extra (trl, peft, datasets); it is imported when an update runs.
"""

from llmdebate.training.config import TrainConfig, UpdateSettings
from llmdebate.training.loop import TrainResult, load_train_config, train

__all__ = ["TrainConfig", "TrainResult", "UpdateSettings", "load_train_config", "train"]
