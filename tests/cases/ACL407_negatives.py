# ACL407 negatives: turned off, chosen by a command-line flag, set only in a
# conditional kwargs dict, and another library's DDP settings (accelerate's kwargs
# handler, a local class that happens to share the name).
import argparse

import torch
from accelerate import DistributedDataParallelKwargs
from torch.nn.parallel import DistributedDataParallel as DDP

parser = argparse.ArgumentParser()
parser.add_argument("--find-unused", action="store_true")
args = parser.parse_args()

model = torch.nn.Linear(8, 2).cuda()
a = DDP(model, device_ids=[0], find_unused_parameters=False)
b = DDP(model, device_ids=[0], find_unused_parameters=args.find_unused)
kwargs = {"device_ids": [0]}
if args.find_unused:
    kwargs["find_unused_parameters"] = True
c = DDP(model, **kwargs)
handler = DistributedDataParallelKwargs(find_unused_parameters=True)


class DistributedDataParallel:
    def __init__(self, module, find_unused_parameters=False):
        self.module = module


d = DistributedDataParallel(model, find_unused_parameters=True)
