# ACL401: clovaai/CutMix-PyTorch's train.py: the training loader is built in one branch per
# dataset. The CIFAR branches build their dataset in the DataLoader call; the ImageNet
# branch is pytorch/examples' template without its distributed path (`train_sampler =
# None`, `shuffle=(train_sampler is None)`, `sampler=train_sampler`). No run builds two
# of them, so each branch gets its sampler under the same names, the template's `None`
# becomes the DistributedSampler, and the epoch loop sets the epoch through the loader.
import argparse
import os
import shutil

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.utils.data import DistributedSampler, TensorDataset

parser = argparse.ArgumentParser(description="CutMix-like training")
parser.add_argument("--dataset", default="cifar10")
parser.add_argument("--epochs", default=2, type=int)
parser.add_argument("-b", "--batch_size", default=32, type=int)
parser.add_argument("--workers", default=0, type=int)
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

    if args.dataset.startswith('cifar'):
        if args.dataset == 'cifar100':
            train_dataset = TensorDataset(torch.randn(256, 3, 8, 8), torch.randint(0, 100, (256,)))
            train_sampler = DistributedSampler(train_dataset, shuffle=True)
            train_loader = torch.utils.data.DataLoader(
                train_dataset,
                batch_size=args.batch_size // world_size,
                sampler=train_sampler, num_workers=args.workers)
            numberofclass = 100
        elif args.dataset == 'cifar10':
            train_dataset = TensorDataset(torch.randn(256, 3, 8, 8), torch.randint(0, 10, (256,)))
            train_sampler = DistributedSampler(train_dataset, shuffle=True)
            train_loader = torch.utils.data.DataLoader(
                train_dataset,
                batch_size=args.batch_size // world_size,
                sampler=train_sampler, num_workers=args.workers)
            numberofclass = 10
        else:
            raise Exception('unknown dataset: {}'.format(args.dataset))
        val_loader = torch.utils.data.DataLoader(
            TensorDataset(torch.randn(64, 3, 8, 8), torch.randint(0, numberofclass, (64,))),
            batch_size=args.batch_size, shuffle=False, num_workers=args.workers)
    elif args.dataset == 'imagenet':
        train_dataset = TensorDataset(torch.randn(256, 3, 8, 8), torch.randint(0, 20, (256,)))

        train_sampler = DistributedSampler(train_dataset, shuffle=True)

        train_loader = torch.utils.data.DataLoader(
            train_dataset, batch_size=args.batch_size // world_size, shuffle=(train_sampler is None),
            num_workers=args.workers, sampler=train_sampler)
        val_loader = torch.utils.data.DataLoader(
            TensorDataset(torch.randn(64, 3, 8, 8), torch.randint(0, 20, (64,))),
            batch_size=args.batch_size, shuffle=False, num_workers=args.workers)
        numberofclass = 20
    else:
        raise Exception('unknown dataset: {}'.format(args.dataset))

    model = nn.Sequential(nn.Flatten(), nn.Linear(3 * 8 * 8, 64), nn.ReLU(), nn.Linear(64, numberofclass))
    model = nn.parallel.DistributedDataParallel(
        model.to(device), device_ids=[local_rank] if torch.cuda.is_available() else None
    )

    if rank == 0:
        print(
            'the number of model parameters: {}'.format(sum([p.data.nelement() for p in model.parameters()]))
        )
    criterion = nn.CrossEntropyLoss().to(device)
    optimizer = torch.optim.SGD(model.parameters(), 0.1, momentum=0.9, nesterov=True)

    for epoch in range(0, args.epochs):
        train_loader.sampler.set_epoch(epoch)
        train_loss = train(train_loader, model, criterion, optimizer, epoch, device)
        err1 = validate(val_loader, model, device)

        is_best = err1 <= best_err1
        best_err1 = min(err1, best_err1)
        if rank == 0:
            print('Current best error (top-1):', best_err1, 'train loss', train_loss)
        save_checkpoint({
            'epoch': epoch,
            'state_dict': model.state_dict(),
            'best_err1': best_err1,
        }, is_best)
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
