# ACL409: micro-batches in an inner loop (`for micro_step in range(k)`), the step after
# it, in a trainer class that wraps its model in `__init__`, under autocast with a
# GradScaler. Only the last micro-batch must synchronize.
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel


class Trainer:
    def __init__(self, model, batches, grad_accum):
        dist.init_process_group("nccl")
        self.rank = dist.get_rank()
        self.model = model.cuda(self.rank)
        self.model = DistributedDataParallel(self.model, device_ids=[self.rank])
        self.batches = batches
        self.grad_accum = grad_accum
        self.optimizer = torch.optim.AdamW(self.model.parameters(), lr=3e-4)  # ACL309
        self.scaler = torch.amp.GradScaler("cuda")  # ACL312

    def train(self, iters):
        for it in range(iters):
            for micro_step in range(self.grad_accum):
                x, y = next(self.batches)
                with torch.autocast("cuda", dtype=torch.bfloat16):
                    loss = (self.model(x) - y).square().mean() / self.grad_accum
                self.scaler.scale(loss).backward()  # ACL409
            self.scaler.step(self.optimizer)
            self.scaler.update()
            self.optimizer.zero_grad(set_to_none=True)
