# ACL409 negative: the script already skips the all-reduce with `no_sync()` (timm's
# shape: a context chosen per micro-batch).
import contextlib

import torch
from torch.nn.parallel import DistributedDataParallel as DDP

model = DDP(torch.nn.Linear(8, 2).cuda(), device_ids=[0])
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)


def train(loader, accum_steps):
    for i, x in enumerate(loader):
        need_update = (i + 1) % accum_steps == 0
        context = contextlib.nullcontext if need_update else model.no_sync
        with context():
            model(x).sum().backward()  # ACL310
        if need_update:
            optimizer.step()  # ACL207
            optimizer.zero_grad()
