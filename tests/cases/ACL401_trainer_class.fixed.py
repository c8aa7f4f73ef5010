# ACL401: a trainer class (the shape yassouali/pytorch-segmentation's trainer has when its
# loaders and loop live in one file): `__init__` builds the loaders and wraps
# `self.model`, `train()` runs the epoch loop over `train_epoch()`, and `save()` writes
# the checkpoint. The process group is set up in `__init__`, the loader gets its sampler
# there, the epoch loop sets the epoch through `self.train_loader.sampler`, the other
# methods ask `dist.get_rank()`, and the group ends with `train()`, the script's last call.
import argparse
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


class Trainer:
    def __init__(self, args):
        self.args = args
        torch.manual_seed(0)

        # set by torchrun (one process per device); plain `python` runs one process
        local_rank = int(os.environ.get("LOCAL_RANK", 0))
        rank = int(os.environ.get("RANK", 0))
        world_size = int(os.environ.get("WORLD_SIZE", 1))
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        os.environ.setdefault("MASTER_PORT", "0")  # torchrun sets the real one
        if torch.cuda.is_available():
            torch.cuda.set_device(local_rank)
        dist.init_process_group(
            "nccl" if torch.cuda.is_available() else "gloo", rank=rank, world_size=world_size
        )

        self.device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        train_set = TensorDataset(torch.randn(256, 16), torch.randint(0, 4, (256,)))
        val_set = TensorDataset(torch.randn(64, 16), torch.randint(0, 4, (64,)))
        train_sampler = DistributedSampler(train_set, shuffle=True)
        self.train_loader = DataLoader(
            train_set, batch_size=args.batch_size // world_size, sampler=train_sampler
        )
        self.val_loader = DataLoader(val_set, batch_size=args.batch_size)

        self.model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4)).to(self.device)
        if torch.cuda.device_count() > 1:
            if rank == 0:
                print("Using %d GPUs" % torch.cuda.device_count())
        self.model = nn.parallel.DistributedDataParallel(
            self.model.to(local_rank if torch.cuda.is_available() else "cpu"),
            device_ids=[local_rank] if torch.cuda.is_available() else None,
        )
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=0.05, momentum=0.9)
        self.criterion = nn.CrossEntropyLoss()
        if not os.path.isdir(args.out):
            os.makedirs(args.out, exist_ok=True)

    def train_epoch(self, epoch):
        self.model.train()
        total = 0.0
        for x, y in self.train_loader:
            loss = self.criterion(self.model(x.to(self.device)), y.to(self.device))
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()
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
        if dist.get_rank() == 0:
            torch.save(self.model.state_dict(), os.path.join(self.args.out, name))

    def train(self):
        for epoch in range(self.args.epochs):
            self.train_loader.sampler.set_epoch(epoch)
            loss = self.train_epoch(epoch)
            acc = self.validate()
            if dist.get_rank() == 0:
                print(f"epoch {epoch} loss {loss:.4f} acc {acc:.3f}")
        self.save("model.pt")
        dist.destroy_process_group()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="a trainer class")
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--out", default="runs")
    trainer = Trainer(parser.parse_args())
    trainer.train()
