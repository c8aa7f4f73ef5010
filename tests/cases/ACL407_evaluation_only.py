# ACL407 negatives: an evaluation script. It wraps the model as its training script
# does, flag included, but runs no backward pass and steps no optimizer: the wrapped
# model only goes to evaluation functions (an imported one, and one of the file's own
# under `torch.no_grad()`). DDP searches for unused parameters only in a forward that
# records a graph, so the flag costs nothing here.
import argparse

import torch
import torch.distributed as dist
from engine import evaluate
from torch.nn.parallel import DistributedDataParallel


@torch.no_grad()
def validate_top1(model, loader, device):
    model.eval()
    correct = total = 0
    for images, target in loader:
        images, target = images.to(device), target.to(device)
        correct += (model(images).argmax(1) == target).sum().item()
        total += target.numel()
    return correct / max(total, 1)


def main(args):
    dist.init_process_group("nccl")
    device = torch.device("cuda", args.gpu)
    model = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(3 * 32 * 32, 10))
    model.to(device)
    model_without_ddp = model
    if args.distributed:
        model = DistributedDataParallel(model, device_ids=[args.gpu], find_unused_parameters=True)
        model_without_ddp = model.module
    checkpoint = torch.load(args.resume, map_location="cpu")
    model_without_ddp.load_state_dict(checkpoint["model"])
    print("parameters:", sum(p.numel() for p in model.parameters()))
    stats = evaluate(args.val_loader, model, device)
    print(stats, validate_top1(model, args.val_loader, device))


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--gpu", type=int, default=0)
    parser.add_argument("--distributed", action="store_true")
    parser.add_argument("--resume", default="checkpoint.pth")
    main(parser.parse_args())
