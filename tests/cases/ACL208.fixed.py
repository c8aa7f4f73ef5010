# 2d convnets trained under CUDA autocast in NCHW: reported at each model's first
# move to the GPU (a convnet class, one built from a block class, a factory).
import torch
import torch.nn as nn
import torch.nn.functional as F


class BasicBlock(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.conv = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(channels)

    def forward(self, x):
        return F.relu(self.bn(self.conv(x)) + x)


class ResNet(nn.Module):
    def __init__(self, block, depth):
        super().__init__()
        self.blocks = nn.Sequential(*[block(64) for _ in range(depth)])
        self.head = nn.Linear(64, 10)

    def forward(self, x):
        return self.head(self.blocks(x).mean((2, 3)))


class Discriminator(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = BasicBlock(64)

    def forward(self, x):
        return self.body(x).mean()


def resnet18():
    return ResNet(BasicBlock, 8)


def main():
    device = torch.device("cuda")
    model = resnet18().to(device)
    model.to(device)
    disc = Discriminator()
    disc.cuda()
    other = ResNet(BasicBlock, 2).to(device).train()
    scaler = torch.amp.GradScaler("cuda")
    opt = torch.optim.SGD([*model.parameters(), *disc.parameters()], lr=0.1)
    for _ in range(10):
        images = torch.randn(32, 64, 32, 32, device=device)
        with torch.autocast("cuda", dtype=torch.float16):
            loss = model(images).mean() + disc(images) + other(images).mean()
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()


if __name__ == "__main__":
    main()
