# ACL401: the GPU count comes from the command line and only picks the devices (the
# shape of pytorch-image-models' scripts, `device_ids=list(range(args.num_gpu))`), and
# the wrap is chained with module methods that return the module.
import argparse
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

parser = argparse.ArgumentParser()
parser.add_argument("--num-gpu", type=int, default=1, help="number of GPUs to use")
parser.add_argument("--epochs", type=int, default=2)
args = parser.parse_args()

# set by torchrun (one process per device); plain `python` runs one process
local_rank = int(os.environ.get("LOCAL_RANK", 0))
rank = int(os.environ.get("RANK", 0))
world_size = int(os.environ.get("WORLD_SIZE", 1))
os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
os.environ.setdefault("MASTER_PORT", "0")  # torchrun sets the real one
if torch.cuda.is_available():
    torch.cuda.set_device(local_rank)
dist.init_process_group(
    "nccl" if torch.cuda.is_available() else "gloo", rank=rank, world_size=world_size
)

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

dataset = TensorDataset(torch.randn(128, 8), torch.randn(128, 1))
sampler = DistributedSampler(dataset, shuffle=False)
loader = DataLoader(
    dataset,
    batch_size=32 // world_size,
    sampler=sampler,
    num_workers=2,
    pin_memory=True,
)
model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1))
model = nn.parallel.DistributedDataParallel(
    model.train().to(device),
    device_ids=[local_rank] if torch.cuda.is_available() else None,
)
if args.num_gpu > 1:
    torch.backends.cudnn.benchmark = True
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
for epoch in range(args.epochs):
    sampler.set_epoch(epoch)
    for x, y in loader:
        loss = nn.functional.mse_loss(model(x.to(device)), y.to(device))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    if rank == 0:
        print(f"epoch {epoch}: {loss.item():.4f}")
dist.destroy_process_group()
