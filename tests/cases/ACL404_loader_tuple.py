# ACL404: loaders read through a loop over a tuple or list of loaders (alternating
# domains each epoch); each sampler gets its `set_epoch` call.
import torch
import torch.distributed as dist
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler


def train(model, optimizer, source_set, target_set, epochs):
    dist.init_process_group("nccl")
    source_sampler = DistributedSampler(source_set)  # ACL404
    target_sampler = DistributedSampler(target_set)  # ACL404
    source_loader = DataLoader(source_set, sampler=source_sampler, batch_size=32, num_workers=4)  # ACL104
    target_loader = DataLoader(target_set, sampler=target_sampler, batch_size=32, num_workers=4)  # ACL104
    for epoch in range(epochs):
        for loader in (source_loader, target_loader):
            for images, labels in loader:
                optimizer.zero_grad()
                loss = torch.nn.functional.cross_entropy(model(images), labels)
                loss.backward()
                optimizer.step()


def train_with_list(model, optimizer, sets, epochs):
    samplers = [DistributedSampler(s) for s in sets]
    a = DataLoader(sets[0], sampler=DistributedSampler(sets[0]), batch_size=32)  # ACL404 ACL101
    b = DataLoader(sets[1], sampler=DistributedSampler(sets[1]), batch_size=32)  # ACL404 ACL101
    for epoch in range(epochs):
        for loader in [a, b]:
            for x, y in loader:
                torch.nn.functional.mse_loss(model(x), y).backward()
                optimizer.step()
    return samplers


def train_already_set(model, optimizer, sets, epochs):
    a = DataLoader(sets[0], sampler=DistributedSampler(sets[0]), batch_size=32)  # ACL101
    b = DataLoader(sets[1], sampler=DistributedSampler(sets[1]), batch_size=32)  # ACL101
    for epoch in range(epochs):
        for loader in (a, b):
            loader.sampler.set_epoch(epoch)
            for x, y in loader:
                torch.nn.functional.mse_loss(model(x), y).backward()
                optimizer.step()
