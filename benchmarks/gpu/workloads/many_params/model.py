"""A deep, narrow residual MLP: hundreds of small parameter tensors, where the
per-tensor cost of zeroing gradients and of the optimizer's update dominates."""

import torch
from torch import nn

SIZES = {
    "small": {"depth": 8, "width": 32, "batch": 16},
    "full": {"depth": 96, "width": 256, "batch": 64},
}


class Residual(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.norm = nn.LayerNorm(width)
        self.up = nn.Linear(width, 2 * width)
        self.down = nn.Linear(2 * width, width)

    def forward(self, x):
        return x + self.down(torch.relu(self.up(self.norm(x))))


def make_model(depth, width):
    return nn.Sequential(*[Residual(width) for _ in range(depth)], nn.Linear(width, 1))
