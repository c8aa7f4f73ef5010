# ACL201: every way a conv's output goes straight into a batch or instance norm.
from collections import OrderedDict

import torch.nn as nn
import torch.nn.functional as F

USE_BIAS = True

# adjacent in nn.Sequential
plain = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1, bias=False), nn.BatchNorm2d(16), nn.ReLU())
explicit = nn.Sequential(nn.Conv2d(3, 16, 3, bias=False), nn.BatchNorm2d(16))
constant = nn.Sequential(nn.Conv2d(3, 16, 3, bias=False), nn.BatchNorm2d(16))
positional = nn.Sequential(nn.Conv2d(3, 16, 3, 1, 1, 1, 1, False), nn.BatchNorm2d(16))
multiline = nn.Sequential(
    nn.Conv2d(
        3,
        16,
        kernel_size=3,
        padding=1,  # same size
        bias=False,
    ),
    nn.BatchNorm2d(16),
    nn.ReLU(inplace=True),
)
black_style = nn.Sequential(
    nn.Conv2d(
        in_channels=3, out_channels=16, kernel_size=3, stride=2, padding=1, dilation=1, bias=False
    ),
    nn.BatchNorm2d(16),
)
one_d = nn.Sequential(nn.Conv1d(8, 8, 5, bias=False), nn.BatchNorm1d(8))
three_d = nn.Sequential(nn.Conv3d(1, 4, 3, bias=False), nn.BatchNorm3d(4))
synced = nn.Sequential(nn.Conv2d(3, 16, 3, bias=False), nn.SyncBatchNorm(16))
instance = nn.Sequential(nn.Conv2d(3, 16, 3, bias=False), nn.InstanceNorm2d(16))
upsample = nn.Sequential(nn.ConvTranspose2d(16, 8, 4, 2, 1, bias=False), nn.BatchNorm2d(8))
up_positional = nn.Sequential(
    nn.ConvTranspose1d(16, 8, 4, 2, 1, 0, 1, False), nn.InstanceNorm1d(8)
)

# OrderedDict: a list of pairs, a dict display, keywords
named = nn.Sequential(
    OrderedDict(
        [
            ("conv", nn.Conv2d(3, 16, 3, bias=False)),
            ("bn", nn.BatchNorm2d(16)),
            ("relu", nn.ReLU()),
        ]
    )
)
from_dict = nn.Sequential(
    OrderedDict({"conv": nn.Conv2d(3, 16, 3, bias=False), "bn": nn.BatchNorm2d(16)})
)
from_keywords = nn.Sequential(
    OrderedDict(conv=nn.Conv3d(3, 16, 3, bias=False), norm=nn.InstanceNorm3d(16))
)

# modules built once and named, then put in a Sequential
stem_conv = nn.Conv2d(3, 32, 7, stride=2, padding=3, bias=False)
stem_bn = nn.BatchNorm2d(32)
stem = nn.Sequential(stem_conv, stem_bn, nn.ReLU(), nn.MaxPool2d(2))


# a list built with +=, .append and .extend, then splatted
def make_layers(widths):
    layers = []
    in_channels = 3
    for width in widths:
        layers += [nn.Conv2d(in_channels, width, 3, padding=1, bias=False), nn.BatchNorm2d(width), nn.ReLU()]
        in_channels = width
    layers.append(nn.Conv2d(in_channels, in_channels, 1, bias=False))
    layers.append(nn.BatchNorm2d(in_channels))
    layers.extend([nn.Conv2d(in_channels, 10, 1, bias=False), nn.InstanceNorm2d(10)])
    return nn.Sequential(*layers)


# a Sequential subclass that hands its modules to nn.Sequential
class ConvBN(nn.Sequential):
    def __init__(self, cin, cout):
        super().__init__(nn.Conv2d(cin, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout))


# forward applies the norm to the conv's result
class Block(nn.Module):
    def __init__(self, cin, cout):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.conv3 = nn.ConvTranspose2d(cout, cout, 2, stride=2, bias=False)
        self.norm3 = nn.InstanceNorm2d(cout, affine=True)

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.conv2(out)
        out = self.bn2(out)
        out = F.relu(out)
        out = self.conv3(out)
        return self.norm3(out)

    def extra_repr(self):
        # reading the weight does not use the conv's output
        return f"{self.conv1.weight.shape}"


class Head(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(64, 64, 1, bias=False)
        self.bn = nn.BatchNorm2d(64)

    def forward(self, x):
        x = self.conv(x); x = self.bn(x)
        return x


def functional_use(x):
    conv = nn.Conv2d(3, 8, 3, bias=False)
    norm = nn.BatchNorm2d(8)
    return norm(conv(x))
