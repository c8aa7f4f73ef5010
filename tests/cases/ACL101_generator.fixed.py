# ACL101: random draws in `__getitem__` decide how the fix is judged (see
# tests/test_acl101_equivalence.py); all three loaders are reported and fixed.
import os
import random

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset


class SeededCrops(Dataset):
    """Each item draws from a generator seeded by its index: what a worker draws
    is what the main process would."""

    def __init__(self, images, size, seed=0):
        self.images = images
        self.size = size
        self.seed = seed

    def __len__(self):
        return len(self.images)

    def __getitem__(self, index):
        g = torch.Generator().manual_seed(self.seed + index)
        image = self.images[index]
        top = torch.randint(0, image.shape[1] - self.size + 1, (1,), generator=g).item()
        left = torch.randint(0, image.shape[2] - self.size + 1, (1,), generator=g).item()
        noise = torch.randn(image.shape[0], self.size, self.size, generator=g)
        rng = np.random.default_rng(self.seed + index)
        scale = float(rng.uniform(0.9, 1.1))
        crop = image[:, top : top + self.size, left : left + self.size]
        return scale * crop + 0.01 * noise


class SharedGeneratorCrops(SeededCrops):
    """One generator kept on the dataset: every worker advances its own copy."""

    def __init__(self, images, size, seed=0):
        super().__init__(images, size, seed)
        self.g = torch.Generator().manual_seed(seed)

    def __getitem__(self, index):
        image = self.images[index]
        top = torch.randint(0, image.shape[1] - self.size + 1, (1,), generator=self.g).item()
        return image[:, top : top + self.size, : self.size]


class GlobalRandomFlip(SeededCrops):
    def __getitem__(self, index):
        image = self.images[index]
        if random.random() < 0.5:
            image = image.flip(-1)
        return image[:, : self.size, : self.size]


def main():
    images = [torch.rand(3, 40, 40) for _ in range(64)]
    seeded = DataLoader(
        SeededCrops(images, 32), batch_size=8, num_workers=min(8, os.cpu_count() or 1)
    )
    shared = DataLoader(
        SharedGeneratorCrops(images, 32),
        batch_size=8,
        num_workers=min(8, os.cpu_count() or 1),
    )
    flipped = DataLoader(
        GlobalRandomFlip(images, 32), batch_size=8, num_workers=min(8, os.cpu_count() or 1)
    )
    for loader in (seeded, shared, flipped):
        for batch in loader:
            print(batch.mean().item())


if __name__ == "__main__":
    main()
