# ACL401: an image-classification script in `main()` (the shape of clovaai/CutMix-PyTorch's
# and akamaster/pytorch_resnet_cifar10's train.py): the training dataset is built in the
# DataLoader call, the wrap is chained with `.to(device)`, `train()` gets the loader as
# an argument and `save_checkpoint()` makes its directory, saves and copies the best.
import argparse
import os
import shutil

import torch
import torch.nn as nn
from torch.utils.data import TensorDataset

parser = argparse.ArgumentParser(description="CutMix-like training")
parser.add_argument("--epochs", default=2, type=int)
parser.add_argument("-b", "--batch_size", default=32, type=int)
parser.add_argument("--workers", default=2, type=int)
parser.add_argument("--expname", default="run")
best_err1 = 100


def main():
    global args, best_err1
    args = parser.parse_args()
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

    train_loader = torch.utils.data.DataLoader(  # ACL104
        TensorDataset(torch.randn(256, 3, 8, 8),
                      torch.randint(0, 10, (256,))),
        batch_size=args.batch_size, shuffle=True, num_workers=args.workers, pin_memory=True)
    val_loader = torch.utils.data.DataLoader(  # ACL104
        TensorDataset(torch.randn(64, 3, 8, 8), torch.randint(0, 10, (64,))),
        batch_size=args.batch_size, shuffle=False, num_workers=args.workers, pin_memory=True)

    print("=> creating model")
    model = nn.Sequential(nn.Flatten(), nn.Linear(3 * 8 * 8, 64), nn.ReLU(), nn.Linear(64, 10))
    model = torch.nn.DataParallel(model).to(device)  # ACL401

    criterion = nn.CrossEntropyLoss().to(device)
    optimizer = torch.optim.SGD(model.parameters(), 0.1, momentum=0.9, nesterov=True)

    for epoch in range(0, args.epochs):
        # train for one epoch
        train_loss = train(train_loader, model, criterion, optimizer, epoch, device)
        # evaluate on validation set
        err1 = validate(val_loader, model, device)

        is_best = err1 <= best_err1
        best_err1 = min(err1, best_err1)
        print("Current best error (top-1):", best_err1)
        save_checkpoint({
            'epoch': epoch,
            'state_dict': model.state_dict(),  # ACL411
            'best_err1': best_err1,
        }, is_best)

    print("Best error (top-1):", best_err1)


def train(train_loader, model, criterion, optimizer, epoch, device):
    model.train()
    total = 0.0
    for i, (input, target) in enumerate(train_loader):
        output = model(input.to(device))  # ACL103
        loss = criterion(output, target.to(device))  # ACL103
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()  # ACL207
        total += loss.item()  # ACL308
    return total / len(train_loader)


def validate(val_loader, model, device):
    model.eval()
    wrong = total = 0
    with torch.no_grad():
        for input, target in val_loader:
            wrong += (model(input.to(device)).argmax(1) != target.to(device)).sum().item()  # ACL103 ACL103
            total += target.size(0)
    return 100.0 * wrong / total


def save_checkpoint(state, is_best, filename='checkpoint.pth.tar'):
    directory = "runs/%s/" % (args.expname)
    if not os.path.exists(directory):
        os.makedirs(directory)
    filename = directory + filename
    torch.save(state, filename)
    if is_best:
        shutil.copyfile(filename, 'runs/%s/' % (args.expname) + 'model_best.pth.tar')


if __name__ == '__main__':
    main()
