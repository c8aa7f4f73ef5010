# ACL403: a file is distributed by what it calls, not by what it imports or mentions.
# dist.init_process_group("nccl") is in a comment only.
import torch
import torch.distributed as dist  # noqa: F401
from torch.nn.parallel import DistributedDataParallel  # noqa: F401


def init_process_group():
    """Not torch's: a project helper of the same name."""


init_process_group()
model = torch.nn.Linear(4, 2)
torch.save(model.state_dict(), "model.pt")
