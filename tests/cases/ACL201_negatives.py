# ACL201: convs whose bias the next layer does not cancel, that already have none,
# or whose bias or use cannot be known statically.
from collections import OrderedDict

import torch
import torch.nn as nn
import torch.nn.functional as F

CONV_OPTIONS = {"padding": 1, "bias": True}

activation = nn.Sequential(nn.Conv2d(3, 8, 3), nn.ReLU(), nn.BatchNorm2d(8))
dropout = nn.Sequential(nn.Conv2d(3, 8, 3), nn.Dropout2d(0.1), nn.BatchNorm2d(8))
pooling = nn.Sequential(nn.Conv2d(3, 8, 3), nn.MaxPool2d(2), nn.BatchNorm2d(8))
group_norm = nn.Sequential(nn.Conv2d(3, 8, 3), nn.GroupNorm(2, 8))
layer_norm = nn.Sequential(nn.Conv1d(3, 8, 3), nn.LayerNorm(8))
already_off = nn.Sequential(nn.Conv2d(3, 8, 3, bias=False), nn.BatchNorm2d(8))
off_positional = nn.Sequential(nn.Conv2d(3, 8, 3, 1, 1, 1, 1, False), nn.BatchNorm2d(8))
norm_first = nn.Sequential(nn.BatchNorm2d(3), nn.Conv2d(3, 8, 3))
splatted_args = nn.Sequential(nn.Conv2d(*[3, 8, 3]), nn.BatchNorm2d(8))
bias_in_kwargs = nn.Sequential(nn.Conv2d(3, 8, 3, **CONV_OPTIONS), nn.BatchNorm2d(8))
repeated_key = nn.Sequential(
    OrderedDict(
        [
            ("conv", nn.Conv2d(3, 8, 3)),
            ("norm", nn.BatchNorm2d(8)),
            ("conv", nn.Conv2d(3, 8, 3, bias=False)),  # replaces the first conv in place
        ]
    )
)


def from_parameter(cin, cout, bias=True):
    return nn.Sequential(nn.Conv2d(cin, cout, 3, bias=bias), nn.BatchNorm2d(cout))


def reordered():
    layers = [nn.Conv2d(3, 8, 3), nn.BatchNorm2d(8)]
    layers.insert(1, nn.ReLU())
    return nn.Sequential(*layers)


def not_a_sequential():
    layers = [nn.Conv2d(3, 8, 3), nn.BatchNorm2d(8)]
    return nn.ModuleList(layers)


class SkipSequential(nn.Sequential):
    """A Sequential subclass with its own forward: the conv's output is used twice."""

    def __init__(self):
        super().__init__(nn.Conv2d(8, 8, 3, padding=1), nn.BatchNorm2d(8))

    def forward(self, x):
        return x + self[1](self[0](x)) + self[0](x)


class Residual(nn.Module):
    """The conv's output is used again after the norm."""

    def __init__(self, c):
        super().__init__()
        self.conv = nn.Conv2d(c, c, 3, padding=1)
        self.bn = nn.BatchNorm2d(c)

    def forward(self, x):
        y = self.conv(x)
        z = self.bn(y)
        return z + y


class SharedConv(nn.Module):
    """One conv applied twice, once without a norm."""

    def __init__(self, c):
        super().__init__()
        self.conv = nn.Conv2d(c, c, 3, padding=1)
        self.bn = nn.BatchNorm2d(c)

    def forward(self, x):
        return self.bn(self.conv(x)) + F.relu(self.conv(x))


class OptionalNorm(nn.Module):
    def __init__(self, c, use_bn):
        super().__init__()
        self.conv = nn.Conv2d(c, c, 3, padding=1)
        self.bn = nn.BatchNorm2d(c)
        self.use_bn = use_bn

    def forward(self, x):
        x = self.conv(x)
        if self.use_bn:
            x = self.bn(x)
        return x


class ChosenConv(nn.Module):
    """Assigned on two paths: which conv runs is decided at run time."""

    def __init__(self, c, bias):
        super().__init__()
        if bias:
            self.conv = nn.Conv2d(c, c, 3, padding=1)
        else:
            self.conv = nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(c)

    def forward(self, x):
        return self.bn(self.conv(x))


class Base(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3)
        self.norm = nn.BatchNorm2d(8)

    def forward(self, x):
        return self.norm(self.conv(x))


class WithoutNorm(Base):
    """A subclass replaces the norm: in it, the conv's bias matters."""

    def __init__(self):
        super().__init__()
        self.norm = nn.Identity()


class Probed(nn.Module):
    def __init__(self):
        super().__init__()
        self.probe_conv = nn.Conv2d(3, 8, 3)
        self.probe_bn = nn.BatchNorm2d(8)

    def forward(self, x):
        return self.probe_bn(self.probe_conv(x))


probed = Probed()
features = probed.probe_conv(torch.randn(1, 3, 8, 8))  # the conv's output, used elsewhere

stem = nn.Conv2d(3, 8, 3)


def functional_norm(x, mean, var):
    return F.batch_norm(stem(x), mean, var, training=True)
