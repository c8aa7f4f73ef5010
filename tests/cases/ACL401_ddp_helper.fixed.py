# ACL401: the YOLO shape of ultralytics/yolov3 and yolov5's train.py: ranks read from
# torchrun's environment at module level, DataParallel as the fallback when `RANK == -1`,
# and the DistributedDataParallel wrap done by the project's own helper
# (`model = smart_DDP(model)`). The migration drops the fallback.
import argparse
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as Wrapper
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

LOCAL_RANK = int(os.getenv("LOCAL_RANK", "-1"))  # https://pytorch.org/docs/stable/elastic/run.html
RANK = int(os.getenv("RANK", "-1"))
WORLD_SIZE = int(os.getenv("WORLD_SIZE", "1"))


# the project's helper (its utils module in the real scripts): the file never calls
# DistributedDataParallel by that name, `model = smart_DDP(model)` is its DDP wrap
def smart_DDP(model):
    return Wrapper(model, device_ids=[LOCAL_RANK] if torch.cuda.is_available() else None)


def train(opt, device):
    cuda = device.type != "cpu"
    torch.manual_seed(0)
    dataset = TensorDataset(torch.randn(96, 10), torch.randn(96, 1))
    sampler = None if RANK == -1 else DistributedSampler(dataset, shuffle=True)
    loader = DataLoader(dataset, batch_size=opt.batch_size // WORLD_SIZE, shuffle=sampler is None, sampler=sampler)
    model = nn.Sequential(nn.Linear(10, 16), nn.Tanh(), nn.Linear(16, 1)).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)

    # DDP mode
    if RANK != -1:
        model = smart_DDP(model)

    for epoch in range(opt.epochs):
        if RANK != -1:
            loader.sampler.set_epoch(epoch)
        for x, y in loader:
            loss = nn.functional.mse_loss(model(x.to(device)), y.to(device))
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        if RANK in {-1, 0}:
            print(f"epoch {epoch}: loss {loss.item():.4f}")
            os.makedirs(opt.save_dir, exist_ok=True)
            state = model.module.state_dict() if hasattr(model, "module") else model.state_dict()
            torch.save(state, os.path.join(opt.save_dir, "last.pt"))


def main(opt):
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if LOCAL_RANK != -1:
        if torch.cuda.is_available():
            torch.cuda.set_device(LOCAL_RANK)
            device = torch.device("cuda", LOCAL_RANK)
        dist.init_process_group(backend="nccl" if dist.is_nccl_available() and torch.cuda.is_available() else "gloo")
    train(opt, device)
    if WORLD_SIZE > 1 and RANK == 0:
        print("Destroying process group... ")
    if LOCAL_RANK != -1:
        dist.destroy_process_group()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=16, help="total batch size for all GPUs")
    parser.add_argument("--save-dir", default="runs/train")
    main(parser.parse_args())
