# ACL101: resolution through imports only, never by spelling.
import os

try:
    from torch.utils.data import DataLoader
except ImportError:  # optional dependency placeholder
    DataLoader = None

from torch.utils.data import *  # noqa: F403
import torch as th
from torchvision.datasets import CIFAR10

cifar = CIFAR10("data", download=True)

first = DataLoader(cifar, num_workers=min(8, os.cpu_count() or 1))
second = th.utils.data.DataLoader(cifar, num_workers=min(8, os.cpu_count() or 1))
third = TensorDataset  # from the star import: not a call
suppressed = DataLoader(cifar)  # noqa: ACL101
all_suppressed = DataLoader(cifar)  # noqa


if __name__ == "__main__":
    print(next(iter(first)))
