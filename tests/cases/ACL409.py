# ACL409: gradient accumulation under DDP, the optimizer stepping every
# `accum_steps` micro-batches (the modulo test of most training scripts): every
# backward all-reduces. The fix skips the all-reduce where the step test is false.
import argparse
import os

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


def train(args, model, loader, optimizer, device):
    model.train()
    for epoch in range(args.epochs):
        loader.sampler.set_epoch(epoch)
        for i, (x, y) in enumerate(loader):
            x, y = x.to(device), y.to(device)
            # one micro-batch
            loss = F.cross_entropy(model(x), y) / args.accum_steps
            loss.backward()  # ACL409
            if (i + 1) % args.accum_steps == 0 or i + 1 == len(loader):
                optimizer.step()
                optimizer.zero_grad()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--accum-steps", type=int, default=4)
    args = parser.parse_args()
    dist.init_process_group("gloo")
    device = torch.device("cpu")
    data = TensorDataset(torch.randn(256, 8), torch.randint(0, 2, (256,)))
    loader = DataLoader(data, batch_size=8, sampler=DistributedSampler(data), num_workers=2)  # ACL104 ACL106
    model = torch.nn.Linear(8, 2).to(device)
    model = DDP(model)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    train(args, model, loader, optimizer, device)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
