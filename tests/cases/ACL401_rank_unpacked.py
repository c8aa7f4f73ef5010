# ACL401: the YOLO shape (WongKinYiu/yolov7's train.py and train_aux.py): `train()`
# unpacks its rank from the options (`..., rank = opt.epochs, ..., opt.global_rank`),
# `opt.global_rank` reads torchrun's `RANK`, and the DataParallel fallback is taken when
# `rank == -1`. The migration drops the fallback; `--local_rank` defaults to `LOCAL_RANK`.
import argparse
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset


def train(opt, device):
    save_dir, epochs, batch_size, rank = opt.save_dir, opt.epochs, opt.batch_size, opt.global_rank
    cuda = device.type != "cpu"
    torch.manual_seed(1 + max(rank, 0))
    dataset = TensorDataset(torch.randn(128, 12), torch.randint(0, 3, (128,)))
    sampler = torch.utils.data.distributed.DistributedSampler(dataset) if rank != -1 else None
    loader = DataLoader(dataset, batch_size=batch_size, sampler=sampler, shuffle=sampler is None)  # ACL102
    model = nn.Sequential(nn.Linear(12, 32), nn.ReLU(), nn.Linear(32, 3)).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)

    # DP mode
    if cuda and rank == -1 and torch.cuda.device_count() > 1:
        model = torch.nn.DataParallel(model)  # ACL401

    # DDP mode
    if rank != -1:
        model = DDP(model, device_ids=[opt.local_rank] if cuda else None)

    for epoch in range(epochs):
        model.train()
        if rank != -1:
            sampler.set_epoch(epoch)
        for x, y in loader:
            loss = nn.functional.cross_entropy(model(x.to(device)), y.to(device))
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()  # ACL207
        if rank in [-1, 0]:
            print(f"epoch {epoch}: loss {loss.item():.4f}")

    if rank in [-1, 0]:
        os.makedirs(save_dir, exist_ok=True)
        state = model.module.state_dict() if hasattr(model, "module") else model.state_dict()
        torch.save(state, os.path.join(save_dir, "last.pt"))
    if rank != -1:
        dist.destroy_process_group()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=16, help="total batch size for all GPUs")
    parser.add_argument("--save-dir", default="runs/train")
    parser.add_argument("--local_rank", type=int, default=-1, help="DDP parameter, do not modify")  # ACL406
    opt = parser.parse_args()
    opt.global_rank = int(os.environ["RANK"]) if "RANK" in os.environ else -1

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if opt.local_rank != -1:
        if torch.cuda.is_available():
            torch.cuda.set_device(opt.local_rank)
            device = torch.device("cuda", opt.local_rank)
        dist.init_process_group(backend="nccl" if torch.cuda.is_available() else "gloo")
        opt.batch_size = opt.batch_size // dist.get_world_size()

    train(opt, device)
