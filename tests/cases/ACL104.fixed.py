# ACL104: loaders with worker processes read every epoch, directly or through the
# file's functions, without persistent workers.
import argparse

import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset

WORKERS = 4
parser = argparse.ArgumentParser()
parser.add_argument("--workers", type=int, default=8)
parser.add_argument("--epochs", type=int, default=10)
args = parser.parse_args()


class Shapes(Dataset):
    def __len__(self):
        return 1024

    def __getitem__(self, index):
        return torch.full((3, 8, 8), float(index % 7)), index % 2


def train_one_epoch(model, loader, optimizer):
    for images, labels in loader:
        optimizer.zero_grad()
        F.cross_entropy(model(images), labels).backward()
        optimizer.step()


def evaluate(model, loader):
    with torch.no_grad():
        return sum(float(model(x).sum()) for x, _ in loader)


def main(model, optimizer):
    train_loader = DataLoader(
        Shapes(), batch_size=64, shuffle=True, num_workers=WORKERS, persistent_workers=True
    )
    val_loader = DataLoader(
        Shapes(),
        batch_size=64,
        num_workers=args.workers,
        persistent_workers=args.workers > 0,
    )
    for epoch in range(args.epochs):
        train_one_epoch(model, train_loader, optimizer)
        if epoch % 5 == 0:
            evaluate(model, val_loader)

    explicit = DataLoader(Shapes(), batch_size=64, num_workers=2, persistent_workers=True)
    for epoch in range(3):
        for images, labels in explicit:
            pass

    # Not flagged: read once, outside any epoch loop.
    test_loader = DataLoader(Shapes(), batch_size=64, num_workers=2)
    evaluate(model, test_loader)

    # Not flagged: persistent already.
    kept = DataLoader(Shapes(), batch_size=64, num_workers=2, persistent_workers=True)
    for epoch in range(3):
        train_one_epoch(model, kept, optimizer)

    # Not flagged: rebuilt every epoch (its workers could not persist anyway).
    for epoch in range(3):
        fresh = DataLoader(Shapes(), batch_size=64, num_workers=2)
        train_one_epoch(model, fresh, optimizer)

    # Not flagged: a `for` over something that is not an epoch count.
    scratch = DataLoader(Shapes(), batch_size=64, num_workers=2)
    for name in ["a", "b"]:
        evaluate(model, scratch)
