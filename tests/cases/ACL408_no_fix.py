# ACL408 without a fix: DDP does not say the model is on a GPU (no `device_ids`, or
# `None` on CPU runs), and SyncBatchNorm raises on CPU tensors.
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel

dist.init_process_group("nccl" if torch.cuda.is_available() else "gloo")
model = nn.Sequential(nn.Linear(8, 16), nn.BatchNorm1d(16), nn.ReLU(), nn.Linear(16, 2))
ddp = DistributedDataParallel(model)  # ACL408
device_ids = [0] if torch.cuda.is_available() else None
other = DistributedDataParallel(  # ACL408
    nn.Sequential(nn.Linear(8, 16), nn.BatchNorm1d(16)), device_ids=device_ids
)
