# ACL404: the loader reaches the epoch loop through functions, methods and attributes.
import argparse

import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

parser = argparse.ArgumentParser()
parser.add_argument("--distributed", action="store_true")
args = parser.parse_args()
model = torch.nn.Linear(4, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
dataset = TensorDataset(torch.randn(64, 4), torch.randn(64, 1))


def train_one_epoch(loader):
    for x, y in loader:
        optimizer.zero_grad()
        torch.nn.functional.mse_loss(model(x), y).backward()
        optimizer.step()


def run_epoch(loader, epoch):
    print("epoch", epoch)
    train_one_epoch(loader)


def main():
    sampler = DistributedSampler(dataset)  # ACL404
    loader = DataLoader(dataset, batch_size=8, sampler=sampler, num_workers=2)  # ACL104 ACL106
    for epoch in range(3): run_epoch(loader, epoch)


def prepare_dataloader(data, batch_size):
    return DataLoader(  # ACL104
        data,
        batch_size=batch_size,
        shuffle=False,
        sampler=DistributedSampler(data),  # ACL404
        num_workers=2,
    )


class Trainer:
    """The shape of the PyTorch DDP tutorial's multigpu_torchrun.py."""

    def __init__(self, train_data):
        self.train_data = train_data

    def _run_batch(self, source, targets):
        optimizer.zero_grad()
        torch.nn.functional.mse_loss(model(source), targets).backward()
        optimizer.step()

    def _run_epoch(self, epoch):
        for source, targets in self.train_data:
            self._run_batch(source, targets)

    def train(self, max_epochs):
        for epoch in range(max_epochs):
            self._run_epoch(epoch)


class OwnsItsSampler:
    def __init__(self, data):
        self.sampler = DistributedSampler(data)  # ACL404
        self.loader = DataLoader(data, sampler=self.sampler, num_workers=2)  # ACL104

    def fit(self, epochs):
        for epoch in range(epochs):
            for x, y in self.loader:
                train_one_epoch([(x, y)])


def fit(loader, epochs):
    for epoch in range(epochs):
        train_one_epoch(loader)


def conditional():
    train_sampler = DistributedSampler(dataset) if args.distributed else None  # ACL404
    loader = DataLoader(  # ACL104 ACL106
        dataset, shuffle=(train_sampler is None), sampler=train_sampler, num_workers=2
    )
    for epoch in range(3):
        train_one_epoch(loader)


if __name__ == "__main__":
    dist.init_process_group("gloo")
    main()
    trainer = Trainer(prepare_dataloader(dataset, 8))
    trainer.train(3)
    OwnsItsSampler(dataset).fit(3)
    fit(DataLoader(dataset, sampler=DistributedSampler(dataset), num_workers=2), 3)  # ACL104 ACL404 ACL106
    conditional()
