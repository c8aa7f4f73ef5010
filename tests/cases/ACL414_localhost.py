# ACL414 look-alike (PyTorch's DDP tutorial series): the rendezvous is this machine, so
# the world is one node and its local ranks are global ones. Not flagged.
import os

import torch.distributed as dist


def ddp_setup(rank, world_size):
    os.environ["MASTER_ADDR"] = "localhost"
    os.environ["MASTER_PORT"] = "12355"
    dist.init_process_group("nccl", rank=rank, world_size=world_size)
