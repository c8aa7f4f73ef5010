# ACL406: a script written for `python -m torch.distributed.launch` (the shape of
# transformers' legacy examples): the device comes from `--local_rank`, which torchrun
# never passes, so under torchrun every process would train alone on the default device.
import argparse

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--local_rank", type=int, default=-1, help="for distributed training")  # ACL406
    args = parser.parse_args()

    if args.local_rank == -1:
        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    else:
        torch.cuda.set_device(args.local_rank)
        device = torch.device("cuda", args.local_rank)
        dist.init_process_group(backend="nccl")

    model = torch.nn.Linear(8, 2).to(device)
    if args.local_rank != -1:
        model = DistributedDataParallel(
            model, device_ids=[args.local_rank], output_device=args.local_rank
        )
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(args.epochs):
        optimizer.zero_grad()
        model(torch.randn(4, 8, device=device)).sum().backward()
        optimizer.step()  # ACL207


if __name__ == "__main__":
    main()
