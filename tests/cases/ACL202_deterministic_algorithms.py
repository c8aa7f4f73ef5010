# `torch.use_deterministic_algorithms(True)` (here from a flag) and a file that sets
# the autotuner through a helper of its own: neither is reported.
import torch
from torch import nn, use_deterministic_algorithms


def setup(deterministic):
    use_deterministic_algorithms(deterministic)


def train(loader, deterministic=False):
    setup(deterministic)
    model = nn.Conv3d(1, 1, 3).cuda()
    for x in loader:
        model(x.cuda()).mean().backward()
