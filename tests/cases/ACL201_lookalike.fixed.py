# ACL201: classes that are not torch's are never flagged, whatever their names.
import mylib
import torch.nn as nn
from mylib.layers import BatchNorm2d, Conv2d


class SamePaddingConv2d(nn.Conv2d):
    """A local subclass: its forward may do more than convolve."""


class GhostBatchNorm(nn.BatchNorm2d):
    """A local subclass: it may normalise differently."""


other_conv = nn.Sequential(Conv2d(3, 8, 3), nn.BatchNorm2d(8))
other_norm = nn.Sequential(nn.Conv2d(3, 8, 3), BatchNorm2d(8))
subclass_conv = nn.Sequential(SamePaddingConv2d(3, 8, 3), nn.BatchNorm2d(8))
subclass_norm = nn.Sequential(nn.Conv2d(3, 8, 3), GhostBatchNorm(8))
other_sequential = mylib.Sequential(nn.Conv2d(3, 8, 3), nn.BatchNorm2d(8))


def shadowed(nn):
    return nn.Sequential(nn.Conv2d(3, 8, 3), nn.BatchNorm2d(8))


class Local:
    def build(self):
        Sequential = list  # a local rebinding
        return Sequential([Conv2d(3, 8, 3), BatchNorm2d(8)])
