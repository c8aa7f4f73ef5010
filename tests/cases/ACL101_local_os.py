# ACL101: the fix spells os.cpu_count for where it goes. A function that binds `os`
# itself makes it local everywhere in the function (a module-level `import os` cannot
# reach it there), so that function gets `from os import cpu_count` instead.
import torch
from torchvision.datasets import MNIST


def train():
    loader = torch.utils.data.DataLoader(MNIST("data"))  # ACL101
    import os

    return loader, os.getpid()


def evaluate():
    return torch.utils.data.DataLoader(MNIST("data"))  # ACL101
