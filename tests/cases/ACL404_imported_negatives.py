# ACL404: should not flag: loaders handed to imported code with set_epoch called, a
# loader only measured, a counting loop that neither trains nor counts epochs, and a
# sampler handed to imported code.
import argparse

import torch.distributed as dist
from engine import benchmark, evaluate, train, train_one_epoch
from torch.utils.data import DataLoader, DistributedSampler, RandomSampler

parser = argparse.ArgumentParser()
parser.add_argument("--epochs", default=10, type=int)
parser.add_argument("--distributed", action="store_true")
args = parser.parse_args()


def main(model, criterion, optimizer, dataset_train, dataset_val, dataset_probe):
    dist.init_process_group("nccl")
    if args.distributed:
        sampler_train = DistributedSampler(dataset_train, shuffle=True)
    else:
        sampler_train = RandomSampler(dataset_train)
    data_loader_train = DataLoader(dataset_train, sampler=sampler_train, num_workers=2)  # ACL104
    sampler_val = DistributedSampler(dataset_val, shuffle=False)
    data_loader_val = DataLoader(dataset_val, sampler=sampler_val, num_workers=2)  # ACL104
    sampler_probe = DistributedSampler(dataset_probe)
    probe_loader = DataLoader(dataset_probe, sampler=sampler_probe, num_workers=2)
    for epoch in range(args.epochs):
        if args.distributed:
            data_loader_train.sampler.set_epoch(epoch)
        train_one_epoch(model, criterion, data_loader_train, optimizer, epoch)
        evaluate(data_loader_val, model)
        print(f"probe: {len(probe_loader)} batches")
    for i in range(3):
        benchmark(model, probe_loader)


def handed_over(model, optimizer, dataset):
    # the imported function gets the sampler too: it may call set_epoch itself
    # (the shape of pytorch/examples' FSDP T5 script)
    sampler = DistributedSampler(dataset, shuffle=True)
    loader = DataLoader(dataset, sampler=sampler, num_workers=2)  # ACL104
    for epoch in range(args.epochs):
        train(model, loader, optimizer, epoch, sampler=sampler)
