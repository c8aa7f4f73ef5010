# ACL401: an image-classification script in `main()` (the shape of clovaai/CutMix-PyTorch's
# and akamaster/pytorch_resnet_cifar10's train.py): the training dataset is built in the
# DataLoader call, the wrap is chained with `.to(device)`, `train()` gets the loader as
# an argument and `save_checkpoint()` makes its directory, saves and copies the best.
import argparse
import os
import shutil

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.utils.data import DistributedSampler, TensorDataset

parser = argparse.ArgumentParser(description="CutMix-like training")
parser.add_argument("--epochs", default=2, type=int)
parser.add_argument("-b", "--batch_size", default=32, type=int)
parser.add_argument("--workers", default=2, type=int)
parser.add_argument("--expname", default="run")
best_err1 = 100


def main():
    global args, best_err1
    args = parser.parse_args()

    # set by torchrun (one process per device); plain `python` runs one process
    local_rank = int(os.environ.get("LOCAL_RANK", 0))
    rank = int(os.environ.get("RANK", 0))
    world_size = int(os.environ.get("WORLD_SIZE", 1))
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "0")  # torchrun sets the real one
    if torch.cuda.is_available():
        torch.cuda.set_device(local_rank)
    dist.init_process_group(
        "nccl" if torch.cuda.is_available() else "gloo", rank=rank, world_size=world_size
    )

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

    train_dataset = TensorDataset(torch.randn(256, 3, 8, 8),
                                  torch.randint(0, 10, (256,)))
    train_sampler = DistributedSampler(train_dataset, shuffle=True)
    train_loader = torch.utils.data.DataLoader(
        train_dataset,
        batch_size=args.batch_size // world_size,
        sampler=train_sampler, num_workers=args.workers, pin_memory=True)
    val_loader = torch.utils.data.DataLoader(
        TensorDataset(torch.randn(64, 3, 8, 8), torch.randint(0, 10, (64,))),
        batch_size=args.batch_size, shuffle=False, num_workers=args.workers, pin_memory=True)

    if rank == 0:
        print("=> creating model")
    model = nn.Sequential(nn.Flatten(), nn.Linear(3 * 8 * 8, 64), nn.ReLU(), nn.Linear(64, 10))
    model = nn.parallel.DistributedDataParallel(
        model.to(device), device_ids=[local_rank] if torch.cuda.is_available() else None
    )

    criterion = nn.CrossEntropyLoss().to(device)
    optimizer = torch.optim.SGD(model.parameters(), 0.1, momentum=0.9, nesterov=True)

    for epoch in range(0, args.epochs):
        train_sampler.set_epoch(epoch)
        # train for one epoch
        train_loss = train(train_loader, model, criterion, optimizer, epoch, device)
        # evaluate on validation set
        err1 = validate(val_loader, model, device)

        is_best = err1 <= best_err1
        best_err1 = min(err1, best_err1)
        if rank == 0:
            print("Current best error (top-1):", best_err1)
        save_checkpoint({
            'epoch': epoch,
            'state_dict': model.state_dict(),
            'best_err1': best_err1,
        }, is_best)

    if rank == 0:
        print("Best error (top-1):", best_err1)
    dist.destroy_process_group()


def train(train_loader, model, criterion, optimizer, epoch, device):
    model.train()
    total = 0.0
    for i, (input, target) in enumerate(train_loader):
        output = model(input.to(device))
        loss = criterion(output, target.to(device))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        total += loss.item()
    return total / len(train_loader)


def validate(val_loader, model, device):
    model.eval()
    wrong = total = 0
    with torch.no_grad():
        for input, target in val_loader:
            wrong += (model(input.to(device)).argmax(1) != target.to(device)).sum().item()
            total += target.size(0)
    return 100.0 * wrong / total


def save_checkpoint(state, is_best, filename='checkpoint.pth.tar'):
    directory = "runs/%s/" % (args.expname)
    if not os.path.exists(directory):
        os.makedirs(directory, exist_ok=True)
    filename = directory + filename
    if dist.get_rank() == 0:
        torch.save(state, filename)
    if is_best:
        if dist.get_rank() == 0:
            shutil.copyfile(filename, 'runs/%s/' % (args.expname) + 'model_best.pth.tar')


if __name__ == '__main__':
    main()
