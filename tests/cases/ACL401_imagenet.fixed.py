# ACL401: the shape of pytorch/examples' ImageNet script and of its copies (MoCo, SimSiam,
# EfficientNet-PyTorch): `main_worker` takes its own DistributedDataParallel path when
# `args.distributed` (`--multiprocessing-distributed`, or `--dist-url env://` with a world
# size), trains on one GPU with `--gpu`, and falls back to DataParallel over every GPU
# (over the features only, for the VGG-style models) otherwise. The migration lets
# torchrun drive the distributed path: `--dist-url` defaults to `env://` and `--gpu` to
# `LOCAL_RANK` under torchrun, the fallback trains on the current GPU, the warning about
# it goes, and the first process of each node saves.
import argparse
import os
import random
import shutil
import warnings

import torch
import torch.backends.cudnn as cudnn
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
import torch.utils.data
import torch.utils.data.distributed
from torch.utils.data import TensorDataset


class VGGSmall(nn.Module):
    def __init__(self, num_classes=10):
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2))
        self.classifier = nn.Linear(8 * 4 * 4, num_classes)

    def forward(self, x):
        return self.classifier(torch.flatten(self.features(x), 1))


def mlp(num_classes=10):
    return nn.Sequential(nn.Flatten(), nn.Linear(3 * 8 * 8, 64), nn.ReLU(), nn.Linear(64, num_classes))


ARCHS = {"mlp": mlp, "vgg_small": VGGSmall}

parser = argparse.ArgumentParser(description="Image classification, one node or many")
parser.add_argument("-a", "--arch", default="mlp", choices=sorted(ARCHS))
parser.add_argument("-j", "--workers", default=2, type=int, help="data loading workers")
parser.add_argument("--epochs", default=2, type=int)
parser.add_argument("-b", "--batch-size", default=64, type=int,
                    help="total batch size of all GPUs of a node")
parser.add_argument("--lr", default=0.05, type=float)
parser.add_argument("--print-freq", default=2, type=int)
parser.add_argument("--world-size", default=-1, type=int, help="number of nodes")
parser.add_argument("--rank", default=-1, type=int, help="node rank")
parser.add_argument(
    "--dist-url",
    default="env://" if "RANK" in os.environ else "tcp://127.0.0.1:23456",
    type=str,
    help="url used to set up distributed training",
)
parser.add_argument("--dist-backend", default="nccl", type=str)
parser.add_argument("--seed", default=None, type=int)
parser.add_argument(
    "--gpu",
    default=(
        int(os.environ["LOCAL_RANK"])
        if "LOCAL_RANK" in os.environ and torch.cuda.is_available()
        else None
    ),
    type=int,
    help="GPU id to use",
)
parser.add_argument("--multiprocessing-distributed", action="store_true",
                    help="spawn one process per GPU of each node")
parser.add_argument("--out", default="runs")

best_acc1 = 0.0


def main():
    args = parser.parse_args()

    if args.seed is not None:
        random.seed(args.seed)
        torch.manual_seed(args.seed)
        warnings.warn("You have chosen to seed training: restarts from a checkpoint may differ.")

    if args.dist_url == "env://" and args.world_size == -1:
        args.world_size = int(os.environ["WORLD_SIZE"])
    args.distributed = args.world_size > 1 or args.multiprocessing_distributed

    ngpus_per_node = torch.cuda.device_count() if torch.cuda.is_available() else 1
    if args.multiprocessing_distributed:
        # one process per GPU: the world grows accordingly
        args.world_size = ngpus_per_node * args.world_size
        mp.spawn(main_worker, nprocs=ngpus_per_node, args=(ngpus_per_node, args))
    else:
        main_worker(args.gpu, ngpus_per_node, args)


def main_worker(gpu, ngpus_per_node, args):
    global best_acc1
    args.gpu = gpu

    if args.gpu is not None:
        print("Use GPU: {} for training".format(args.gpu))

    if args.distributed:
        if args.dist_url == "env://" and args.rank == -1:
            args.rank = int(os.environ["RANK"])
        if args.multiprocessing_distributed:
            # the global rank among the processes of every node
            args.rank = args.rank * ngpus_per_node + gpu
        dist.init_process_group(backend=args.dist_backend, init_method=args.dist_url,
                                world_size=args.world_size, rank=args.rank)

    print("=> creating model '{}'".format(args.arch))
    model = ARCHS[args.arch]()

    if not torch.cuda.is_available():
        print("using CPU, this will be slow")
    elif args.distributed:
        if args.gpu is not None:
            torch.cuda.set_device(args.gpu)
            model.cuda(args.gpu)
            # one GPU per process: each loads its share of the node's batch
            args.batch_size = int(args.batch_size / ngpus_per_node)
            args.workers = int((args.workers + ngpus_per_node - 1) / ngpus_per_node)
            model = torch.nn.parallel.DistributedDataParallel(model, device_ids=[args.gpu])
        else:
            model.cuda()
            model = torch.nn.parallel.DistributedDataParallel(model)
    elif args.gpu is not None:
        torch.cuda.set_device(args.gpu)
        model = model.cuda(args.gpu)
    else:
        # one process trains on one GPU; torchrun starts one per GPU
        args.gpu = torch.cuda.current_device()
        model = model.cuda(args.gpu)

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    criterion = nn.CrossEntropyLoss().to(device)
    optimizer = torch.optim.SGD(model.parameters(), args.lr, momentum=0.9)

    cudnn.benchmark = True

    generator = torch.Generator().manual_seed(0)
    train_dataset = TensorDataset(torch.randn(256, 3, 8, 8, generator=generator),
                                  torch.randint(0, 10, (256,), generator=generator))
    val_dataset = TensorDataset(torch.randn(64, 3, 8, 8, generator=generator),
                                torch.randint(0, 10, (64,), generator=generator))

    if args.distributed:
        train_sampler = torch.utils.data.distributed.DistributedSampler(train_dataset)
    else:
        train_sampler = None

    train_loader = torch.utils.data.DataLoader(
        train_dataset, batch_size=args.batch_size, shuffle=(train_sampler is None),
        num_workers=args.workers, pin_memory=True, sampler=train_sampler)
    val_loader = torch.utils.data.DataLoader(
        val_dataset, batch_size=args.batch_size, shuffle=False,
        num_workers=args.workers, pin_memory=True)

    for epoch in range(args.epochs):
        if args.distributed:
            train_sampler.set_epoch(epoch)
        train(train_loader, model, criterion, optimizer, epoch, args)
        acc1 = validate(val_loader, model, args)

        is_best = acc1 > best_acc1
        best_acc1 = max(acc1, best_acc1)

        # torchrun's processes are not spawned: the first of each node saves
        if (
            not args.multiprocessing_distributed
            and os.environ.get("LOCAL_RANK", "0") == "0"
        ) or (args.multiprocessing_distributed and args.rank % ngpus_per_node == 0):
            save_checkpoint({
                "epoch": epoch + 1,
                "arch": args.arch,
                "state_dict": model.state_dict(),
                "best_acc1": best_acc1,
                "optimizer": optimizer.state_dict(),
            }, is_best, args.out)


def train(train_loader, model, criterion, optimizer, epoch, args):
    model.train()
    for i, (images, target) in enumerate(train_loader):
        if args.gpu is not None:
            images = images.cuda(args.gpu, non_blocking=True)
        if torch.cuda.is_available():
            target = target.cuda(args.gpu, non_blocking=True)

        output = model(images)
        loss = criterion(output, target)

        optimizer.zero_grad()
        loss.backward()
        optimizer.step()

        if i % args.print_freq == 0:
            print("Epoch: [{}][{}/{}]\tLoss {:.4f}".format(epoch, i, len(train_loader), loss.item()))


def validate(val_loader, model, args):
    model.eval()
    correct = total = 0
    with torch.no_grad():
        for images, target in val_loader:
            if args.gpu is not None:
                images = images.cuda(args.gpu, non_blocking=True)
            if torch.cuda.is_available():
                target = target.cuda(args.gpu, non_blocking=True)
            correct += (model(images).argmax(1) == target).sum().item()
            total += target.size(0)
    acc1 = 100.0 * correct / total
    print(" * Acc@1 {:.3f}".format(acc1))
    return acc1


def save_checkpoint(state, is_best, out):
    os.makedirs(out, exist_ok=True)
    filename = os.path.join(out, "checkpoint.pth.tar")
    torch.save(state, filename)
    if is_best:
        shutil.copyfile(filename, os.path.join(out, "model_best.pth.tar"))


if __name__ == "__main__":
    main()
