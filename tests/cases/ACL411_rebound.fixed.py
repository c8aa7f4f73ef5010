# ACL411: `checkpoint` is bound twice in one function: loaded from disk, then rebuilt
# as a dict for saving. The binding that reaches `torch.save` is the dict, which holds
# the wrapped model's state_dict().
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


def main():
    dist.init_process_group("nccl")
    rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(rank)
    torch.set_float32_matmul_precision("high")
    model = nn.Linear(10, 1).cuda()
    checkpoint = torch.load("last.pt", map_location="cpu")
    model.load_state_dict(checkpoint["model"])
    model = DDP(model, device_ids=[rank])
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, fused=True)
    for step in range(100):
        x = torch.randn(32, 10, device="cuda")
        loss = model(x).pow(2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    if dist.get_rank() == 0:
        checkpoint = {"model": model.module.state_dict(), "optimizer": optimizer.state_dict()}
        torch.save(checkpoint, "last.pt")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
