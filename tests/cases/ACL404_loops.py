# ACL404: which loops are epoch loops: a `while` or a counter of steps that trains
# (no fix: no epoch variable to pass), a `while` over an epoch counter.
import argparse

import torch
from engine import train_one_epoch
from torch.utils.data import DataLoader, DistributedSampler

parser = argparse.ArgumentParser()
parser.add_argument("--epochs", default=10, type=int)
parser.add_argument("--max-steps", default=1000, type=int)
args = parser.parse_args()


def until_max_steps(model, optimizer, dataset):
    sampler = DistributedSampler(dataset)  # ACL404
    loader = DataLoader(dataset, sampler=sampler, batch_size=8, num_workers=2)  # ACL104
    step = 0
    while step < args.max_steps:
        for x, y in loader:
            optimizer.zero_grad()
            torch.nn.functional.mse_loss(model(x), y).backward()
            optimizer.step()
            step += 1


def epoch_counter(model, dataset):
    sampler = DistributedSampler(dataset)  # ACL404
    loader = DataLoader(dataset, sampler=sampler, batch_size=8, num_workers=2)  # ACL104
    epoch = 0
    while epoch < args.epochs:
        train_one_epoch(model, loader)
        epoch += 1


def restarted_iterator(model, optimizer, dataset):
    sampler = DistributedSampler(dataset)  # ACL404
    loader = DataLoader(dataset, sampler=sampler, batch_size=8, num_workers=2)  # ACL104
    batches = iter(loader)
    for step in range(args.max_steps):
        try:
            x, y = next(batches)
        except StopIteration:
            batches = iter(loader)
            x, y = next(batches)
        optimizer.zero_grad()
        torch.nn.functional.mse_loss(model(x), y).backward()
        optimizer.step()


def serving(model, dataset):
    # should not flag: the `while` neither trains nor counts epochs
    loader = DataLoader(dataset, sampler=DistributedSampler(dataset), batch_size=8, num_workers=2)
    while True:
        with torch.no_grad():
            for x, _ in loader:
                model(x)


def sampled_once(model, dataset):
    # should not flag: one iterator, consumed across the steps
    loader = DataLoader(dataset, sampler=DistributedSampler(dataset), batch_size=8, num_workers=2)
    batches = iter(loader)
    for step in range(args.max_steps):
        x, y = next(batches)
        torch.nn.functional.mse_loss(model(x), y).backward()
