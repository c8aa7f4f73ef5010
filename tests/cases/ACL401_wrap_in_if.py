# ACL401: a CIFAR script at module level (the shape of kuangliu/pytorch-cifar's main.py):
# the wrap sits in `if device == "cuda":` with another statement after it, the loaders
# and the model are globals of `train()` and `test()`, and the checkpoint directory is
# made on demand before the save.
import argparse
import os

import torch
import torch.backends.cudnn as cudnn
import torch.nn as nn
import torch.optim as optim
from torch.utils.data import TensorDataset

parser = argparse.ArgumentParser(description="CIFAR-like training")
parser.add_argument("--lr", default=0.1, type=float, help="learning rate")
parser.add_argument("--epochs", default=2, type=int)
parser.add_argument("--out", default="checkpoint")
args = parser.parse_args()

device = "cuda" if torch.cuda.is_available() else "cpu"
best_acc = 0  # best test accuracy
start_epoch = 0

# Data
trainset = TensorDataset(torch.randn(256, 3, 8, 8), torch.randint(0, 10, (256,)))
trainloader = torch.utils.data.DataLoader(  # ACL104 ACL106
    trainset, batch_size=32, shuffle=True, num_workers=2, pin_memory=True)

testset = TensorDataset(torch.randn(64, 3, 8, 8), torch.randint(0, 10, (64,)))
testloader = torch.utils.data.DataLoader(  # ACL104 ACL106
    testset, batch_size=16, shuffle=False, num_workers=2, pin_memory=True)

# Model
net = nn.Sequential(nn.Flatten(), nn.Linear(3 * 8 * 8, 64), nn.ReLU(), nn.Linear(64, 10))
net = net.to(device)
if device == "cuda":
    net = torch.nn.DataParallel(net)  # ACL401
    cudnn.benchmark = True

criterion = nn.CrossEntropyLoss()
optimizer = optim.SGD(net.parameters(), lr=args.lr, momentum=0.9, weight_decay=5e-4)


def train(epoch):
    print("\nEpoch: %d" % epoch)
    net.train()
    for batch_idx, (inputs, targets) in enumerate(trainloader):
        inputs, targets = inputs.to(device), targets.to(device)  # ACL103 ACL103
        optimizer.zero_grad()
        loss = criterion(net(inputs), targets)
        loss.backward()
        optimizer.step()  # ACL207


def test(epoch):
    global best_acc
    net.eval()
    correct = 0
    total = 0
    with torch.no_grad():
        for inputs, targets in testloader:
            inputs, targets = inputs.to(device), targets.to(device)  # ACL103 ACL103
            correct += net(inputs).argmax(1).eq(targets).sum().item()
            total += targets.size(0)

    # Save checkpoint.
    acc = 100.0 * correct / total
    if acc >= best_acc:
        print("Saving..")
        state = {"net": net.state_dict(), "acc": acc, "epoch": epoch}  # ACL411
        if not os.path.isdir(args.out):
            os.mkdir(args.out)
        torch.save(state, os.path.join(args.out, "ckpt.pth"))
        best_acc = acc


for epoch in range(start_epoch, start_epoch + args.epochs):
    train(epoch)
    test(epoch)
