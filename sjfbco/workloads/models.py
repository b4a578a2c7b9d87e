"""The measured DNN model table (docs/model.md section 7; Wang et al., arXiv:2002.10105, 10 GbE).

Each model gives its gradient size (MB) and its forward and backward time per
iteration (seconds) at the listed batch size. Generators and trace readers
draw jobs' models from here so that every workload shares one table.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sjfbco.errors import check_text
from sjfbco.limits import MAX_BATCH_SIZE, MAX_GRADIENT_MB, MAX_SECONDS
from sjfbco.problem import check_int_range, check_range


@dataclass(frozen=True)
class Model:
    """One DNN model: gradient size in MB, forward/backward seconds per iteration at ``batch``."""

    name: str
    gradient_mb: float
    forward_seconds: float
    backward_seconds: float
    batch_size: int

    def __post_init__(self) -> None:
        # each field's type and range first: job_fields divides by batch_size
        check_text(self.name, "name")
        check_range(self.gradient_mb, "gradient_mb", 0, MAX_GRADIENT_MB)
        check_range(self.forward_seconds, "forward_seconds", 0, MAX_SECONDS)
        check_range(self.backward_seconds, "backward_seconds", 0, MAX_SECONDS)
        check_int_range(self.batch_size, "batch_size", 1, MAX_BATCH_SIZE)

    @property
    def compute_seconds(self) -> float:
        """Compute time per iteration, seconds (forward + backward)."""
        return self.forward_seconds + self.backward_seconds

    def job_fields(self) -> dict[str, Any]:
        """Fields of an instance job running this model (the forward/backward form)."""
        return {
            "gradient_mb": self.gradient_mb,
            "forward_seconds_per_sample": self.forward_seconds / self.batch_size,
            "batch_size": self.batch_size,
            "backward_seconds": self.backward_seconds,
            "model": self.name,
        }


MODELS: tuple[Model, ...] = (
    Model("alexnet", 235.0, 0.045, 0.085, 256),
    Model("googlenet", 26.7, 0.060, 0.092, 64),
    Model("resnet50", 97.7, 0.038, 0.067, 16),
    Model("vgg16", 526.4, 0.036, 0.054, 16),
    Model("inception-v3", 103.0, 0.035, 0.052, 16),
    Model("lstm-ptb", 251.8, 0.032, 0.047, 64),
)

MODEL_BY_NAME: dict[str, Model] = {m.name: m for m in MODELS}
