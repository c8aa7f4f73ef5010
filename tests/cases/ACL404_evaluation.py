# ACL404: samplers whose loaders only evaluate (no backward pass or optimizer step in the
# code that iterates them) are not reported, however they are named: the order does not
# change an evaluation's result. The training sampler is.
import torch
import torch.distributed as dist
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler

from engine import evaluate, train_one_epoch


@torch.no_grad()
def measure(model, loader):
    return sum(model(x).sum().item() for x, _ in loader)


def accuracy(model, loader):
    model.eval()
    correct = 0
    with torch.inference_mode():
        for x, y in loader:
            correct += (model(x).argmax(1) == y).sum().item()
    return correct


def main(args, model, optimizer, train_set, holdout_set, probe_set, val_set):
    dist.init_process_group("nccl")
    train_sampler = DistributedSampler(train_set)  # ACL404
    train_loader = DataLoader(train_set, sampler=train_sampler, batch_size=64, num_workers=8)  # ACL104
    holdout = DataLoader(holdout_set, sampler=DistributedSampler(holdout_set), batch_size=64, num_workers=8)  # ACL104
    probe = DataLoader(probe_set, sampler=DistributedSampler(probe_set), batch_size=64, num_workers=8)  # ACL104
    sampler_val = DistributedSampler(val_set, shuffle=True)
    data_loader_val = DataLoader(val_set, sampler=sampler_val, batch_size=64, num_workers=8)  # ACL104
    for epoch in range(args.epochs):
        train_one_epoch(model, train_loader, optimizer, epoch)
        evaluate(data_loader_val, model)
        print(epoch, accuracy(model, holdout), measure(model, probe))
