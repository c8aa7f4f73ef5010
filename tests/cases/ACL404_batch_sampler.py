# ACL404 through a batch sampler (torchvision's detection references): the
# DistributedSampler is wrapped in a BatchSampler, or in a project's own batch sampler
# class, and the loader gets it as batch_sampler=.
import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

from group_by_aspect_ratio import GroupedBatchSampler


def train_one_epoch(model, loader, optimizer):
    for x, y in loader:
        optimizer.zero_grad()
        torch.nn.functional.mse_loss(model(x), y).backward()
        optimizer.step()


def main(args):
    dist.init_process_group("gloo")
    data = TensorDataset(torch.randn(64, 4), torch.randn(64, 2))
    model = torch.nn.Linear(4, 2)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

    plain = DistributedSampler(data)  # ACL404
    plain_batches = torch.utils.data.BatchSampler(plain, 8, drop_last=True)
    loader = DataLoader(data, batch_sampler=plain_batches, num_workers=2)  # ACL104 ACL106

    grouped = DistributedSampler(data)  # ACL404
    grouped_batches = GroupedBatchSampler(grouped, [0] * 64, 8)
    grouped_loader = DataLoader(data, batch_sampler=grouped_batches, num_workers=2)  # ACL104 ACL106

    handed = DistributedSampler(data)  # given to code that may set its epoch itself
    run_elsewhere(data, sampler=handed)

    for epoch in range(args.epochs):
        train_one_epoch(model, loader, optimizer)
        train_one_epoch(model, grouped_loader, optimizer)


def run_elsewhere(data, sampler):
    from trainer import fit

    fit(data, sampler=sampler)
