# ACL406 without a fix: the option's default comes from `set_defaults`, which the fix
# would have to change instead.
import argparse

import torch

parser = argparse.ArgumentParser()
parser.add_argument("--local_rank", type=int)  # ACL406
parser.set_defaults(local_rank=0)
args = parser.parse_args()
model = torch.nn.Linear(2, 2).cuda(args.local_rank)
