# ACL408 negatives: converted first (torch's converter, apex's, or only when a flag asks
# for it), SyncBatchNorm built directly, GroupNorm models, a model whose only BatchNorm
# is an `isinstance` test in its weight init, and models the file cannot see into.
import argparse

import timm
import torch
import torch.nn as nn
from apex.parallel import convert_syncbn_model
from torch.nn.parallel import DistributedDataParallel as DDP

parser = argparse.ArgumentParser()
parser.add_argument("--sync-bn", action="store_true")
args = parser.parse_args()


class GroupNormNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3)
        self.norm = nn.GroupNorm(2, 8)
        for m in self.modules():
            if isinstance(m, (nn.BatchNorm2d, nn.GroupNorm)):
                nn.init.ones_(m.weight)

    def forward(self, x):
        return self.norm(self.conv(x))


def bn_model():
    return nn.Sequential(nn.Conv2d(3, 8, 3, bias=False), nn.BatchNorm2d(8))


a = nn.SyncBatchNorm.convert_sync_batchnorm(bn_model()).cuda()
a = DDP(a, device_ids=[0])
b = DDP(convert_syncbn_model(bn_model().cuda()), device_ids=[0])
c = bn_model().cuda()
if args.sync_bn:
    c = torch.nn.SyncBatchNorm.convert_sync_batchnorm(c)
c = DDP(c, device_ids=[0])
d = DDP(nn.Sequential(nn.Conv2d(3, 8, 3, bias=False), nn.SyncBatchNorm(8)).cuda(), device_ids=[0])
e = DDP(GroupNormNet().cuda(), device_ids=[0])
f = DDP(timm.create_model("resnet50").cuda(), device_ids=[0])
