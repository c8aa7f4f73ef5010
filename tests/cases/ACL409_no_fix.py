# ACL409 without a fix: DDP only when launched distributed (transformers' legacy
# examples, with apex's fp16 branch); a step test on a counter the micro-batch moves; a
# forward inside a helper; a step after the loop for the leftover micro-batches.
import torch
import torch.distributed as dist
from apex import amp
from torch.nn.parallel import DistributedDataParallel as DDP


def compute_loss(model, batch):
    return model(batch).mean()


def train(args, model, loader, optimizer):
    if args.local_rank != -1:
        model = DDP(model, device_ids=[args.local_rank], output_device=args.local_rank)
    for step, batch in enumerate(loader):
        loss = model(batch).mean() / args.gradient_accumulation_steps
        if args.fp16:
            with amp.scale_loss(loss, optimizer) as scaled_loss:  # ACL306
                scaled_loss.backward()  # ACL409
        else:
            loss.backward()
        if (step + 1) % args.gradient_accumulation_steps == 0:
            optimizer.step()
            model.zero_grad()


def train_counted(args, model, loader, optimizer):
    model = DDP(model, device_ids=[args.local_rank])
    seen = 0
    for batch in loader:
        loss = model(batch).mean()
        loss.backward()  # ACL409 ACL310
        seen += 1
        if seen % args.accum == 0:
            optimizer.step()
            optimizer.zero_grad()


def train_helper(args, model, loader, optimizer):
    model = DDP(model, device_ids=[args.local_rank])
    for i, batch in enumerate(loader):
        compute_loss(model, batch).backward()  # ACL409 ACL310
        if (i + 1) % args.accum == 0:
            optimizer.step()
            optimizer.zero_grad()


def train_leftover(args, model, loader, optimizer):
    model = DDP(model, device_ids=[args.local_rank])
    for i, batch in enumerate(loader):
        model(batch).mean().backward()  # ACL409 ACL310
        if (i + 1) % args.accum == 0:
            optimizer.step()
            optimizer.zero_grad()
    optimizer.step()


if __name__ == "__main__":
    dist.init_process_group("nccl")
