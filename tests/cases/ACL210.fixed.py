# ACL210: the state_dict() of a compiled model saved: every key has `_orig_mod.`.
import argparse

import torch
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP


def train_and_save(model, loader, path):
    model = torch.compile(model)
    optimizer = torch.optim.AdamW(model.parameters())
    for x, y in loader:
        nn.functional.mse_loss(model(x), y).backward()
        optimizer.step()
        optimizer.zero_grad()
    torch.save(getattr(model, "_orig_mod", model).state_dict(), path)
    torch.save(
        {"model": getattr(model, "_orig_mod", model).state_dict(), "optimizer": optimizer.state_dict()},
        path,
    )


def flagged(args, model, path):
    if args.compile:
        model = torch.compile(model, mode="max-autotune")
    state = getattr(model, "_orig_mod", model).state_dict()
    torch.save(state, path)


class Trainer:
    def __init__(self, model):
        self.model = torch.compile(model)

    def save(self, path):
        torch.save([getattr(self.model, "_orig_mod", self.model).state_dict()], path)


def wrapped(model, rank, path):
    ddp = DDP(torch.compile(model), device_ids=[rank])
    torch.save(getattr(ddp.module, "_orig_mod", ddp.module).state_dict(), path)


# Not flagged: already unwrapped, compiled in place (`nn.Module.compile` keeps the
# keys), or never compiled.
def fine(model, other, path):
    compiled = torch.compile(model)
    torch.save(compiled._orig_mod.state_dict(), path)
    torch.save(getattr(compiled, "_orig_mod", compiled).state_dict(), path)
    other.compile()
    torch.save(other.state_dict(), path)
    torch.save(model.state_dict(), path)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--compile", action="store_true")
    args = parser.parse_args()
    flagged(args, nn.Linear(3, 1), "m.pt")


# nanoGPT's shape: compiled under a flag, wrapped under another, unwrapped by a
# conditional expression, and the checkpoint name bound more than once.
def nanogpt(model, args, ddp, rank, path):
    checkpoint = torch.load(path) if args.resume else None
    if args.compile:
        model = torch.compile(model)
    if ddp:
        model = DDP(model, device_ids=[rank])
    raw_model = model.module if ddp else model
    checkpoint = None
    if args.save:
        checkpoint = {"model": getattr(raw_model, "_orig_mod", raw_model).state_dict(), "args": args}
        torch.save(checkpoint, path)
    return checkpoint
