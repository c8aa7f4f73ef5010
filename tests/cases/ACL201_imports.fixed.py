# ACL201: conv and norm classes resolve through every import form.
import torch
import torch.nn.modules.conv
from torch import nn
from torch.nn import BatchNorm2d as BN
from torch.nn import Conv2d as C
from torch.nn.modules.batchnorm import BatchNorm1d
from torch.nn.modules.conv import ConvTranspose1d

Conv = nn.Conv3d  # an alias by assignment

full = torch.nn.Sequential(
    torch.nn.Conv2d(3, 8, 3, bias=False), torch.nn.BatchNorm2d(8)
)
renamed = nn.Sequential(C(3, 8, 3, bias=False), BN(8))
inner = nn.Sequential(
    torch.nn.modules.conv.Conv2d(3, 8, 3, bias=False), nn.BatchNorm2d(8)
)
from_modules = nn.Sequential(ConvTranspose1d(3, 8, 3, bias=False), BatchNorm1d(8))
by_alias = nn.Sequential(Conv(3, 8, 3, bias=False), nn.BatchNorm3d(8))
suppressed = nn.Sequential(nn.Conv2d(3, 8, 3), nn.BatchNorm2d(8))  # noqa: ACL201
