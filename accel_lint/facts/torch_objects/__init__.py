"""What a receiver is (`opt`, `model`, `self.optimizer`): built by torch, by a class
of this file, or by something clearly not torch's; read through assignments, never
through spelling. Asked by the gradient-zeroing rules (`TorchObjects.of(facts)`)."""

from accel_lint.facts.torch_objects.kinds import Kind
from accel_lint.facts.torch_objects.objects import TorchObjects

__all__ = ["Kind", "TorchObjects"]
