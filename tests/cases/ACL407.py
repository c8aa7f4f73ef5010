# ACL407: DDP told to search for unused parameters after every forward: as a literal,
# through a module constant, and through a kwargs dict the script builds.
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

FIND_UNUSED = True

dist.init_process_group("nccl")
rank = dist.get_rank()
backbone = torch.nn.Linear(8, 8).cuda(rank)
head = torch.nn.Linear(8, 2).cuda(rank)
encoder = torch.nn.Linear(8, 4).cuda(rank)
backbone = DDP(backbone, device_ids=[rank], find_unused_parameters=True)  # ACL407
head = torch.nn.parallel.DistributedDataParallel(
    head,
    device_ids=[rank],
    find_unused_parameters=FIND_UNUSED,  # ACL407
)
ddp_kwargs = dict(broadcast_buffers=False, find_unused_parameters=True)
encoder = DDP(encoder, device_ids=[rank], **ddp_kwargs)  # ACL407
