# ACL401: a script that trains with DistributedDataParallel when it is launched
# distributed (`--local_rank` given) and falls back to DataParallel on several GPUs of
# one process otherwise: the shape of the fine-tuning scripts of the BERT era. The
# migration drops the fallback and lets torchrun take the script's own distributed
# path: `--local_rank` now defaults to torchrun's `LOCAL_RANK`.
import argparse
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, RandomSampler, TensorDataset
from torch.utils.data.distributed import DistributedSampler


def train(args, model, dataset, device):
    if args.local_rank == -1:
        sampler = RandomSampler(dataset)
    else:
        sampler = DistributedSampler(dataset)
    loader = DataLoader(dataset, sampler=sampler, batch_size=args.train_batch_size, num_workers=2, pin_memory=True)  # ACL104
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.learning_rate)  # ACL309
    model.train()
    for epoch in range(args.num_train_epochs):
        if args.local_rank != -1:
            sampler.set_epoch(epoch)
        for step, (features, labels) in enumerate(loader):
            logits = model(features.to(device))  # ACL103
            loss = nn.functional.cross_entropy(logits, labels.to(device))  # ACL103
            if args.n_gpu > 1:
                loss = loss.mean()  # mean() to average on multi-gpu
            loss.backward()
            optimizer.step()  # ACL207
            optimizer.zero_grad()
        if args.local_rank in [-1, 0]:
            print(f"epoch {epoch}: loss {loss.item():.4f}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--output_dir", default="output")
    parser.add_argument("--train_batch_size", default=16, type=int)
    parser.add_argument("--learning_rate", default=1e-3, type=float)
    parser.add_argument("--num_train_epochs", default=2, type=int)
    parser.add_argument("--local_rank", type=int, default=-1, help="local_rank for distributed training")  # ACL406
    args = parser.parse_args()

    if args.local_rank == -1:
        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        args.n_gpu = torch.cuda.device_count()
    else:
        if torch.cuda.is_available():
            torch.cuda.set_device(args.local_rank)
            device = torch.device("cuda", args.local_rank)
        else:
            device = torch.device("cpu")
        dist.init_process_group(backend="nccl" if torch.cuda.is_available() else "gloo")
        args.n_gpu = 1
    print(f"device: {device} n_gpu: {args.n_gpu}, distributed training: {args.local_rank != -1}")

    torch.manual_seed(42)
    dataset = TensorDataset(torch.randn(128, 32), torch.randint(0, 3, (128,)))
    model = nn.Sequential(nn.Linear(32, 64), nn.Tanh(), nn.Linear(64, 3)).to(device)
    if args.local_rank != -1:
        model = DDP(model, device_ids=[args.local_rank] if torch.cuda.is_available() else None)
    elif args.n_gpu > 1:
        model = torch.nn.DataParallel(model)  # ACL401

    train(args, model, dataset, device)

    if args.local_rank in [-1, 0]:
        os.makedirs(args.output_dir, exist_ok=True)
        to_save = model.module if hasattr(model, "module") else model
        torch.save(to_save.state_dict(), os.path.join(args.output_dir, "model.bin"))
    if args.local_rank != -1:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
