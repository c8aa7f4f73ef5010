# ACL408 (off by default): DDP on models whose BatchNorm layers normalize with each
# GPU's own few samples: a class of the file (its BatchNorm built in a block class and
# through a `norm_layer` variable), and a torchvision ResNet.
import os

import torch
import torch.distributed as dist
import torch.nn as nn
import torchvision
from torch.nn.parallel import DistributedDataParallel as DDP


class Block(nn.Module):
    def __init__(self, channels, norm_layer=nn.BatchNorm2d):
        super().__init__()
        self.conv = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.norm = norm_layer(channels)

    def forward(self, x):
        return torch.relu(self.norm(self.conv(x)))


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 16, 3, padding=1)
        self.blocks = nn.Sequential(Block(16), Block(16))
        self.head = nn.Linear(16, 10)

    def forward(self, x):
        return self.head(self.blocks(self.stem(x)).mean((2, 3)))


def main():
    dist.init_process_group("nccl")
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)
    model = Net().cuda()
    model = DDP(model, device_ids=[local_rank])  # ACL408
    backbone = torchvision.models.resnet50(weights=None).cuda()
    backbone = DDP(backbone, device_ids=[local_rank], output_device=local_rank)  # ACL408
    return model, backbone


if __name__ == "__main__":
    main()
