# ACL101: the fix spells os.cpu_count for where it goes. A function that binds `os`
# itself makes it local everywhere in the function (a module-level `import os` cannot
# reach it there), so that function gets `from os import cpu_count` instead.
import os
from os import cpu_count

import torch
from torchvision.datasets import MNIST


def train():
    loader = torch.utils.data.DataLoader(
        MNIST("data"), num_workers=min(8, cpu_count() or 1)
    )
    import os

    return loader, os.getpid()


def evaluate():
    return torch.utils.data.DataLoader(
        MNIST("data"), num_workers=min(8, os.cpu_count() or 1)
    )
