# ACL413: torch.distributed.barrier() on every training step.
import torch
import torch.distributed as dist
from torch import distributed


def train(model, optimizer, loader, epochs):
    for epoch in range(epochs):
        for step, (x, y) in enumerate(loader):
            optimizer.zero_grad()
            loss = torch.nn.functional.cross_entropy(model(x), y)
            loss.backward()
            optimizer.step()
            dist.barrier()  # ACL413
        # at the epoch's end: once per epoch, not flagged
        dist.barrier()


def train_guarded(model, optimizer, loader, args):
    for x, y in loader:
        model(x).sum().backward()
        optimizer.step()
        if dist.is_initialized():
            distributed.barrier()  # ACL413
        if args.distributed:
            torch.distributed.barrier()  # ACL413


def step_fn(model, optimizer, batch):
    model(batch).mean().backward()
    optimizer.step()
    dist.barrier()  # ACL413


def train_calls(model, optimizer, loader):
    for batch in loader:
        step_fn(model, optimizer, batch)


# Not flagged: every k steps, on one rank's branch, in an evaluation loop, and before
# the loop.
def periodic(model, optimizer, loader, rank):
    dist.barrier()
    for step, batch in enumerate(loader):
        model(batch).mean().backward()
        optimizer.step()
        if step % 100 == 0:
            dist.barrier()
            torch.save(model.state_dict(), "ckpt.pt")


def evaluate(model, loader):
    with torch.no_grad():
        for batch in loader:
            model(batch)
            dist.barrier()
