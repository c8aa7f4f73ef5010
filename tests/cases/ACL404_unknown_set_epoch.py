# ACL404: a set_epoch() on something the rule cannot follow (here a wrapper from
# another library that forwards it to the sampler) may be this sampler's, so
# nothing in the file is flagged.
import torch
from mylib.data import Prefetcher
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

model = torch.nn.Linear(4, 1)
dataset = TensorDataset(torch.randn(64, 4), torch.randn(64, 1))
loader = DataLoader(dataset, sampler=DistributedSampler(dataset), num_workers=2)  # ACL104 ACL106
prefetcher = Prefetcher(loader)
for epoch in range(3):
    prefetcher.set_epoch(epoch)
    for x, y in loader:
        torch.nn.functional.mse_loss(model(x), y).backward()
