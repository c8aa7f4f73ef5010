# ACL401: a trainer class (the shape yassouali/pytorch-segmentation's trainer has when its
# loaders and loop live in one file): `__init__` builds the loaders and wraps
# `self.model`, `train()` runs the epoch loop over `train_epoch()`, and `save()` writes
# the checkpoint. The process group is set up in `__init__`, the loader gets its sampler
# there, the epoch loop sets the epoch through `self.train_loader.sampler`, the other
# methods ask `dist.get_rank()`, and the group ends with `train()`, the script's last call.
import argparse
import os

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


class Trainer:
    def __init__(self, args):
        self.args = args
        torch.manual_seed(0)
        self.device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        train_set = TensorDataset(torch.randn(256, 16), torch.randint(0, 4, (256,)))
        val_set = TensorDataset(torch.randn(64, 16), torch.randint(0, 4, (64,)))
        self.train_loader = DataLoader(train_set, batch_size=args.batch_size, shuffle=True)  # ACL102
        self.val_loader = DataLoader(val_set, batch_size=args.batch_size)  # ACL102

        self.model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4)).to(self.device)
        if torch.cuda.device_count() > 1:
            print("Using %d GPUs" % torch.cuda.device_count())
            self.model = nn.DataParallel(self.model)  # ACL401
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=0.05, momentum=0.9)
        self.criterion = nn.CrossEntropyLoss()
        if not os.path.isdir(args.out):
            os.makedirs(args.out)

    def train_epoch(self, epoch):
        self.model.train()
        total = 0.0
        for x, y in self.train_loader:
            loss = self.criterion(self.model(x.to(self.device)), y.to(self.device))
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()  # ACL207
            total += loss.item()
        return total / len(self.train_loader)

    def validate(self):
        self.model.eval()
        correct = 0
        with torch.no_grad():
            for x, y in self.val_loader:
                correct += (self.model(x.to(self.device)).argmax(1) == y.to(self.device)).sum().item()
        return correct / len(self.val_loader.dataset)

    def save(self, name):
        torch.save(self.model.state_dict(), os.path.join(self.args.out, name))  # ACL411

    def train(self):
        for epoch in range(self.args.epochs):
            loss = self.train_epoch(epoch)
            acc = self.validate()
            print(f"epoch {epoch} loss {loss:.4f} acc {acc:.3f}")
        self.save("model.pt")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="a trainer class")
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--out", default="runs")
    trainer = Trainer(parser.parse_args())
    trainer.train()
