# ACL411: checkpoints of a wrapped model (the ImageNet-example shape): the state dict
# handed to a helper that saves it, inside a dict, and saved directly at the end.
import os

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def save_checkpoint(state, filename="checkpoint.pth.tar"):
    torch.save(state, filename)


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    model = torch.nn.Linear(8, 2)
    model = DDP(model)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(2):
        if rank == 0:
            save_checkpoint(
                {
                    "epoch": epoch,
                    "state_dict": model.state_dict(),  # ACL411
                    "optimizer": optimizer.state_dict(),
                }
            )
    if rank == 0:
        torch.save(model.state_dict(), os.path.join("out", "final.pt"))  # ACL411
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
