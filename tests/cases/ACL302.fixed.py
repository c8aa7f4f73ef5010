# ACL302: zero_grad(set_to_none=False) on modules and optimizers, however they are named.
import abc
import argparse
from typing import Generic, TypeVar

import deepspeed
import torch
import torch.nn as nn
from torch.optim import SGD

KEEP_GRADS = True
T = TypeVar("T")

parser = argparse.ArgumentParser()
parser.add_argument("--keep-grads", action="store_true")
args = parser.parse_args()


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 2)

    def reset(self):
        self.zero_grad(set_to_none=True)


class Meter:
    def zero_grad(self, set_to_none=True):
        self.total = 0

    def reset(self):
        self.zero_grad(set_to_none=False)


class Stats(Meter):
    pass


model = Net().to("cpu")
opt = SGD(model.parameters(), lr=0.1)
adam = torch.optim.Adam(model.parameters())

opt.zero_grad(set_to_none=True)
model.zero_grad(set_to_none=True)
adam.zero_grad(set_to_none=True)
adam.zero_grad(set_to_none=KEEP_GRADS)
opt.zero_grad(
    set_to_none=True,
)


def train_step(net, optimizer, x):
    optimizer.zero_grad(set_to_none=True)
    net(x).sum().backward()
    optimizer.step()


class Loop:
    def __init__(self, optimizer):
        self.optimizer = optimizer
        self.meter = Meter()

    def step(self):
        self.optimizer.zero_grad(set_to_none=True)
        self.meter.zero_grad(set_to_none=False)


# not flagged: already None, the latest default, values read at run time
opt.zero_grad(set_to_none=True)
opt.zero_grad()
model.zero_grad(set_to_none=args.keep_grads)
kwargs = {"set_to_none": False}
opt.zero_grad(**kwargs)
# not flagged: objects that are clearly not torch's
Meter().zero_grad(set_to_none=False)
meter = Meter()
meter.zero_grad(set_to_none=False)
stats = Stats()
stats.zero_grad(set_to_none=False)
engine, ds_opt, _, _ = deepspeed.initialize(model=model)
engine.zero_grad(set_to_none=False)


class Tracker(abc.ABC):
    def zero_grad(self, set_to_none=True):
        pass


class Typed(Generic[T]):
    def zero_grad(self, set_to_none=True):
        pass


Tracker().zero_grad(set_to_none=False)
Typed().zero_grad(set_to_none=False)
