# Tests pin their numerics on purpose: a step in a test function or a test class
# is not a training run.
import unittest

import torch
import torch.nn as nn


class CheckpointTest(unittest.TestCase):
    def _train(self, model: nn.Module) -> None:
        opt = torch.optim.SGD(model.parameters(), lr=0.01)
        model(torch.randn(8, 64).cuda()).sum().backward()
        opt.step()


def test_one_step() -> None:
    model = nn.Linear(64, 64).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    model(torch.randn(8, 64).cuda()).sum().backward()
    opt.step()
