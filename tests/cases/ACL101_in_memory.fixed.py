# ACL101: loaders over data already in memory that need no per-item work are not
# reported (workers would only add copies between processes); a loader over files
# on disk, or with a collate_fn of its own, still is.
import argparse
import os

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Subset, TensorDataset, random_split
from torchvision import datasets, transforms


def synthetic_regression(n, features, seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, features, generator=g)
    y = x @ torch.randn(features, 1, generator=g) + 0.1 * torch.randn(n, 1, generator=g)
    return TensorDataset(x, y)


def pad_batch(batch):
    lengths = [len(seq) for seq in batch]
    out = torch.zeros(len(batch), max(lengths))
    for i, seq in enumerate(batch):
        out[i, : len(seq)] = seq
    return out


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", default="data/images")
    parser.add_argument("--epochs", type=int, default=3)
    args = parser.parse_args()

    train_set = synthetic_regression(2048, 16, seed=0)
    val_set = synthetic_regression(256, 16, seed=1)
    train_loader = DataLoader(train_set, batch_size=64, shuffle=True)
    val_loader = DataLoader(val_set, batch_size=256)
    head = DataLoader(Subset(train_set, range(128)), batch_size=32)
    features = torch.randn(512, 16)
    raw_tensor = DataLoader(features, batch_size=32)
    pairs = DataLoader([(0, 1), (1, 0), (1, 1)], batch_size=2)
    ragged = [torch.ones(3), torch.ones(5), torch.ones(2)]
    padded = DataLoader(
        ragged,
        batch_size=2,
        collate_fn=pad_batch,
        num_workers=min(8, os.cpu_count() or 1),
    )
    images = datasets.ImageFolder(args.data, transform=transforms.ToTensor())
    image_loader = DataLoader(
        images, batch_size=32, shuffle=True, num_workers=min(8, os.cpu_count() or 1)
    )
    halves = random_split(images, [0.5, 0.5])
    half_loader = DataLoader(
        halves[0], batch_size=32, num_workers=min(8, os.cpu_count() or 1)
    )

    model = nn.Linear(16, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    for epoch in range(args.epochs):
        for x, y in train_loader:
            optimizer.zero_grad(set_to_none=True)
            loss = nn.functional.mse_loss(model(x), y)
            loss.backward()
            optimizer.step()
        with torch.no_grad():
            val = sum(nn.functional.mse_loss(model(x), y).item() for x, y in val_loader)
        print(f"epoch {epoch}: val {val:.4f}")
    return head, raw_tensor, pairs, padded, image_loader, half_loader


if __name__ == "__main__":
    main()
