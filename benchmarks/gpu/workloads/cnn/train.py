"""A ResNet-style CNN (conv + BatchNorm blocks) trained with one-hot targets.

What accel-lint finds here: every conv feeds a BatchNorm with its bias still on
(ACL201), cuDNN's autotuner is never turned on (ACL202), and the one-hot targets
of each step are built on the CPU and then copied to the GPU (ACL203).
The images are generated on the device once, so the loop measures the model.
"""

import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F

SIZES = {
    "small": {"images": 256, "resolution": 16, "width": 8, "batch": 32},
    "full": {"images": 16384, "resolution": 64, "width": 64, "batch": 256},
}
CLASSES = 100


class Block(nn.Module):
    def __init__(self, in_channels, out_channels, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(in_channels, out_channels, 3, stride=stride, padding=1)
        self.bn1 = nn.BatchNorm2d(out_channels)
        self.conv2 = nn.Conv2d(out_channels, out_channels, 3, padding=1)
        self.bn2 = nn.BatchNorm2d(out_channels)
        self.shortcut = nn.Sequential()
        if stride != 1 or in_channels != out_channels:
            self.shortcut = nn.Sequential(
                nn.Conv2d(in_channels, out_channels, 1, stride=stride),
                nn.BatchNorm2d(out_channels),
            )

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return F.relu(out + self.shortcut(x))


class ResNet(nn.Module):
    def __init__(self, width, classes):
        super().__init__()
        self.stem = nn.Sequential(
            nn.Conv2d(3, width, 3, padding=1), nn.BatchNorm2d(width), nn.ReLU(inplace=True)
        )
        self.layers = nn.Sequential(
            Block(width, width, 1),
            Block(width, 2 * width, 2),
            Block(2 * width, 4 * width, 2),
            Block(4 * width, 8 * width, 2),
        )
        self.head = nn.Linear(8 * width, classes)

    def forward(self, x):
        x = self.layers(self.stem(x))
        return self.head(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


def main():
    parser = argparse.ArgumentParser(description="ResNet-style CNN on synthetic images")
    parser.add_argument("--size", choices=sorted(SIZES), default="full")
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--no-cuda", action="store_true", help="train on the CPU")
    args = parser.parse_args()
    size = SIZES[args.size]
    use_cuda = not args.no_cuda and torch.cuda.is_available()
    device = torch.device("cuda" if use_cuda else "cpu")

    torch.manual_seed(0)
    resolution = size["resolution"]
    images = torch.randn(size["images"], 3, resolution, resolution, device=device)
    labels = torch.randint(0, CLASSES, (size["images"],), device=device)
    model = ResNet(size["width"], CLASSES).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9, weight_decay=5e-4)

    batch = size["batch"]
    for epoch in range(args.epochs):
        model.train()
        order = torch.randperm(len(images), device=device)
        for start in range(0, len(images) - batch + 1, batch):
            index = order[start : start + batch]
            x, y = images[index], labels[index]
            targets = torch.zeros(batch, CLASSES).to(device)
            targets.scatter_(1, y.unsqueeze(1), 1.0)
            optimizer.zero_grad()
            loss = F.cross_entropy(model(x), targets)
            loss.backward()
            optimizer.step()
        print(f"epoch {epoch}: loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
