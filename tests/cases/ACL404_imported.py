# ACL404: the timm/DeiT/MAE layout: the epoch loop hands its loaders to functions
# imported from another module, which are assumed to iterate what they receive.
import argparse

import torch.distributed as dist
from engine import evaluate, train_one_epoch
from torch.utils.data import DataLoader, DistributedSampler, RandomSampler

parser = argparse.ArgumentParser()
parser.add_argument("--epochs", default=10, type=int)
parser.add_argument("--start_epoch", default=0, type=int)
parser.add_argument("--distributed", action="store_true")
args = parser.parse_args()


def main(model, criterion, optimizer, dataset_train, dataset_val, dataset_extra):
    dist.init_process_group("nccl")
    sampler_train = DistributedSampler(dataset_train, shuffle=True)  # ACL404
    # shuffled to reduce monitor bias: no fix, evaluation does not depend on the order
    sampler_val = DistributedSampler(dataset_val, shuffle=True)  # ACL404
    data_loader_train = DataLoader(dataset_train, sampler=sampler_train, num_workers=2)  # ACL104
    data_loader_val = DataLoader(dataset_val, sampler=sampler_val, num_workers=2)  # ACL104
    if args.distributed:
        # no fix: `sampler_extra` is a RandomSampler on other runs
        sampler_extra = DistributedSampler(dataset_extra)  # ACL404
    else:
        sampler_extra = RandomSampler(dataset_extra)
    data_loader_extra = DataLoader(dataset_extra, sampler=sampler_extra, num_workers=2)  # ACL104
    for epoch in range(args.start_epoch, args.epochs):
        train_one_epoch(model, criterion, data_loader_train, optimizer, epoch)
        train_one_epoch(
            model=model,
            criterion=criterion,
            data_loader=data_loader_extra,
            optimizer=optimizer,
            epoch=epoch,
        )
        test_stats = evaluate(data_loader_val, model)
        print(f"{len(data_loader_val)} batches: {test_stats}")
