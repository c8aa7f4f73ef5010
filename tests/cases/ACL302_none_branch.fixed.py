# ACL302: `zero_grad(set_to_none=False)` on one branch of an `if` whose other branch
# sets the gradients to None is a deliberate choice: not reported. Alone, it is.
import argparse

import torch
import torch.nn as nn

parser = argparse.ArgumentParser()
parser.add_argument("--keep-grads", action="store_true")
args = parser.parse_args()

model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 10))
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
probe_optimizer = torch.optim.SGD(model[0].parameters(), lr=1e-2)


def train_step(x, y):
    if args.keep_grads:
        optimizer.zero_grad(set_to_none=False)
    else:
        optimizer.zero_grad(set_to_none=True)
    loss = nn.functional.cross_entropy(model(x), y)
    loss.backward()
    optimizer.step()
    return loss


def probe_step(x):
    if args.keep_grads:
        for p in model[0].parameters():
            p.grad = None
    else:
        probe_optimizer.zero_grad(False)
    model[0](x).pow(2).mean().backward()
    probe_optimizer.step()


def finetune_step(x, y):
    optimizer.zero_grad(set_to_none=True)
    nn.functional.cross_entropy(model(x), y).backward()
    optimizer.step()
