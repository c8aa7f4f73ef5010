# ACL401 without a fix: a trainer wraps its model once on each path of an `if`, held in
# an attribute (`self.model`), which the migration does not follow: one model, not 2.
import torch
import torch.nn as nn


class Trainer:
    def __init__(self, args):
        self.model = nn.Linear(4, 1).cuda()
        if args.gpus == "all":
            self.model = nn.DataParallel(self.model)
        else:
            self.model = nn.DataParallel(self.model, device_ids=[int(g) for g in args.gpus.split(",")])
