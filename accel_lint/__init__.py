"""accel-lint: find, fix and verify PyTorch training performance anti-patterns."""

__version__ = "0.1.0"
