# ACL401: the script sits in `if __name__ == "__main__":`, imports classes by name, passes
# DataLoader arguments by position, moves the wrapped model, indents by two spaces.
import os

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


def build():
  return nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1))


if __name__ == "__main__":
  torch.manual_seed(0)

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

  device = "cuda" if torch.cuda.is_available() else "cpu"
  data = TensorDataset(torch.randn(256, 8), torch.randn(256, 1))
  # batches of 32, in order
  sampler = DistributedSampler(data, shuffle=False)
  loader = DataLoader(
    data, 32 // world_size, sampler=sampler, num_workers=2, pin_memory=True
  )
  model = DistributedDataParallel(
    build().to(device), device_ids=[local_rank] if torch.cuda.is_available() else None
  )
  opt = torch.optim.SGD(model.parameters(), lr=0.01)
  for epoch in range(3):
    sampler.set_epoch(epoch)
    for x, y in loader:
      loss = nn.functional.mse_loss(model(x.to(device)), y.to(device))
      opt.zero_grad()
      loss.backward()
      opt.step()
  if rank == 0:
    print("final loss", loss.item())
    torch.save(model.state_dict(), "final.pt")
  dist.destroy_process_group()
