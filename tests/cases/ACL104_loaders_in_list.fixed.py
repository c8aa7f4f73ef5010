# ACL104: the loaders reach the epoch function inside a list literal and are unpacked
# there (`train_loader, val_loader = loaders`); a second pair travels in a dict and is
# read through `zip(*...)`. Only the loaders read every epoch are reported.
import torch
import torch.nn as nn
from torch.utils.data import DataLoader


def run_epoch(model, optimizer, loaders):
    train_loader, val_loader = loaders
    model.train()
    for x, y in train_loader:
        x, y = x.cuda(non_blocking=True), y.cuda(non_blocking=True)
        loss = (model(x) - y).pow(2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return len(val_loader)


def run_paired(model, optimizer, pairs):
    for (xa, ya), (xb, yb) in zip(*pairs.values()):
        loss = (model(xa.cuda()) - yb.cuda()).pow(2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


def main():
    torch.set_float32_matmul_precision("high")
    data = torch.load("data.pt")
    train_loader = DataLoader(
        data,
        batch_size=32,
        shuffle=True,
        num_workers=4,
        pin_memory=True,
        persistent_workers=True,
    )
    val_loader = DataLoader(data, batch_size=64, num_workers=4, pin_memory=True)
    model = nn.Linear(10, 1).cuda()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, fused=True)
    for epoch in range(10):
        run_epoch(model, optimizer, [train_loader, val_loader])
    side_a = DataLoader(
        data, batch_size=32, num_workers=2, pin_memory=True, persistent_workers=True
    )
    side_b = DataLoader(
        data, batch_size=32, num_workers=2, pin_memory=True, persistent_workers=True
    )
    for epoch in range(10):
        run_paired(model, optimizer, {"a": side_a, "b": side_b})


if __name__ == "__main__":
    main()
