# ACL105: DataLoader arguments that raise ValueError together.
import argparse

import torch
from torch.utils.data import (
    BatchSampler,
    DataLoader,
    RandomSampler,
    SequentialSampler,
    TensorDataset,
    WeightedRandomSampler,
)

NUM_WORKERS = 0
parser = argparse.ArgumentParser()
parser.add_argument("--workers", type=int, default=0)
parser.add_argument("--prefetch", type=int, default=4)
args = parser.parse_args()
dataset = TensorDataset(torch.randn(64, 4), torch.randint(0, 2, (64,)))
weights = torch.ones(64)

# persistent workers and prefetching need worker processes
a = DataLoader(dataset, batch_size=8, persistent_workers=True)  # ACL105
b = DataLoader(dataset, batch_size=8, num_workers=0, prefetch_factor=4)  # ACL105
c = DataLoader(  # ACL105
    dataset,
    batch_size=8,
    num_workers=NUM_WORKERS,
    prefetch_factor=2,
    persistent_workers=True,
)
d = DataLoader(dataset, batch_size=8, num_workers=args.workers, persistent_workers=True)  # ACL105

# a sampler decides the order: shuffle cannot apply
sampler = WeightedRandomSampler(weights, num_samples=64)
e = DataLoader(dataset, batch_size=8, shuffle=True, sampler=sampler)  # ACL105
f = DataLoader(dataset, 8, True, RandomSampler(dataset))  # ACL105

# a batch sampler decides the batches
batches = BatchSampler(SequentialSampler(dataset), batch_size=8, drop_last=False)
g = DataLoader(dataset, batch_size=8, batch_sampler=batches)  # ACL105
h = DataLoader(dataset, batch_sampler=batches, shuffle=True, drop_last=True)  # ACL105
i = DataLoader(dataset, sampler=sampler, batch_sampler=batches)  # ACL105

# Not flagged: these run.
ok = [
    DataLoader(dataset, batch_size=8, num_workers=2, persistent_workers=True, prefetch_factor=4),  # ACL106
    DataLoader(dataset, batch_size=8, prefetch_factor=None, persistent_workers=False),
    DataLoader(dataset, batch_size=1, batch_sampler=batches),
    DataLoader(dataset, batch_sampler=batches, drop_last=False, shuffle=False),
    DataLoader(dataset, batch_size=8, shuffle=False, sampler=sampler),
    DataLoader(dataset, batch_size=8, num_workers=args.prefetch, prefetch_factor=args.prefetch),
]
