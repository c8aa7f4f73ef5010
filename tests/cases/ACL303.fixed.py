# Autograd's debugging aids: left on, and kept behind a flag or in a check.
import argparse
import os

import torch
import torch.nn.functional as F
from torch.autograd import detect_anomaly, gradcheck
from torch.autograd import profiler

model = torch.nn.Linear(8, 2)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
parser = argparse.ArgumentParser()
parser.add_argument("--debug", action="store_true")
parser.add_argument("--profile", action="store_true")
args = parser.parse_args()


def train(loader):
    for x, y in loader:
        with detect_anomaly():
            loss = F.cross_entropy(model(x), y)
            loss.backward()
        optimizer.step()


def train_with_report(loader):
    with profiler.profile(use_device="cuda") as prof:
        for x, y in loader:
            F.cross_entropy(model(x), y).backward()
            optimizer.step()
    print(prof.key_averages().table())


def train_nvtx(loader):
    with torch.autograd.profiler.emit_nvtx():
        for x, y in loader:
            F.cross_entropy(model(x), y).backward()
            optimizer.step()


class Swish(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * torch.sigmoid(x)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        s = torch.sigmoid(x)
        return grad * (s + x * s * (1 - s))


def build():
    x = torch.randn(4, dtype=torch.double, requires_grad=True)
    gradcheck(Swish.apply, (x,))
    return Swish.apply


# -- not reported --------------------------------------------------------------------

if args.debug:
    torch.autograd.set_detect_anomaly(True)
torch.autograd.set_detect_anomaly(args.debug)
torch.autograd.set_detect_anomaly(False)
if os.environ.get("DETECT_ANOMALY"):
    torch.autograd.set_detect_anomaly(True)


def train_maybe_profiled(loader):
    with profiler.profile(enabled=args.profile):
        for x, y in loader:
            F.cross_entropy(model(x), y).backward()
            optimizer.step()


def check_swish():
    x = torch.randn(4, dtype=torch.double, requires_grad=True)
    assert torch.autograd.gradcheck(Swish.apply, (x,))
    assert torch.autograd.gradgradcheck(Swish.apply, (x,))


def test_swish():
    x = torch.randn(4, dtype=torch.double, requires_grad=True)
    assert gradcheck(Swish.apply, (x,))


def enable_debugging():
    torch.autograd.set_detect_anomaly(True)


if args.debug:
    enable_debugging()
