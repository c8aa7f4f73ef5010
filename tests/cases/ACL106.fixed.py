# ACL106: DataLoader workers over data already in memory.
import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset, Subset, TensorDataset


class Pairs(Dataset):
    def __init__(self, features, labels):
        self.features = features.float()
        self.labels = labels

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, index):
        return self.features[index], self.labels[index]


def seed_worker(worker_id):
    np.random.seed(worker_id)


def loaders(n):
    x = torch.randn(n, 8)
    y = torch.randint(0, 2, (n,))
    data = TensorDataset(x, y)
    a = DataLoader(data, batch_size=32, shuffle=True, num_workers=0)
    b = DataLoader(
        TensorDataset(x, y),
        batch_size=32,
        num_workers=0,
    )
    c = DataLoader(Pairs(x, y), batch_size=16, num_workers=0)
    d = DataLoader(Subset(data, range(10)), batch_size=2, num_workers=0)
    e = DataLoader(np.zeros((n, 3)), batch_size=4, num_workers=0)
    return a, b, c, d, e


class Images(Dataset):
    """Reads a file per item: workers overlap the reads."""

    def __init__(self, paths):
        self.paths = paths

    def __len__(self):
        return len(self.paths)

    def __getitem__(self, index):
        return torch.load(self.paths[index])


class Augmented(Dataset):
    def __init__(self, x, transform):
        self.x = torch.as_tensor(x)
        self.transform = transform

    def __len__(self):
        return len(self.x)

    def __getitem__(self, index):
        return self.transform(self.x[index])


def collate(batch):
    return torch.stack(batch)


# Not flagged: per-item reads or transforms, a collate function, no workers, the
# count from the command line, a memory-mapped array.
def fine(paths, x, args, transform):
    a = DataLoader(Images(paths), batch_size=8, num_workers=4)
    b = DataLoader(Augmented(x, transform), batch_size=8, num_workers=4)
    c = DataLoader(TensorDataset(x), batch_size=8, num_workers=4, collate_fn=collate)
    d = DataLoader(TensorDataset(x), batch_size=8, num_workers=0)
    e = DataLoader(TensorDataset(x), batch_size=8, num_workers=args.workers)
    f = DataLoader(np.load("x.npy", mmap_mode="r"), batch_size=8, num_workers=4)
    g = DataLoader(paths, batch_size=8, num_workers=4)
    return a, b, c, d, e, f, g
