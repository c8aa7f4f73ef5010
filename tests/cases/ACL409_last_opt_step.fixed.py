# ACL409: the yolov5 family steps when `ni - last_opt_step >= accumulate`: accumulation
# written with a counter of the last step instead of a modulo.
import contextlib
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler


def train(dataset, epochs, batch_size, nbs=64):
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)
    dist.init_process_group("nccl")
    torch.backends.cuda.matmul.fp32_precision = "tf32"
    sampler = DistributedSampler(dataset)
    loader = DataLoader(
        dataset,
        batch_size=batch_size,
        sampler=sampler,
        num_workers=4,
        pin_memory=True,
        persistent_workers=True,
    )
    model = DDP(nn.Linear(10, 1).cuda(), device_ids=[local_rank])
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, fused=True)
    accumulate = max(round(nbs / batch_size), 1)
    nb = len(loader)
    last_opt_step = -1
    for epoch in range(epochs):
        sampler.set_epoch(epoch)
        for i, (imgs, targets) in enumerate(loader):
            ni = i + nb * epoch
            imgs = imgs.cuda(non_blocking=True)
            with (
                contextlib.nullcontext()
                if ni - last_opt_step >= accumulate
                else model.no_sync()
            ):
                loss = (model(imgs) - targets.cuda(non_blocking=True)).pow(2).mean()
                loss.backward()
            if ni - last_opt_step >= accumulate:
                optimizer.step()
                optimizer.zero_grad()
                last_opt_step = ni
    dist.destroy_process_group()
