# ACL406 without a fix: a required option (Swin Transformer's shape): under torchrun,
# where nothing passes it, the script stops before it starts.
import argparse

import torch

parser = argparse.ArgumentParser()
parser.add_argument("--local_rank", type=int, required=True, help="local rank for DDP")
args = parser.parse_args()
torch.cuda.set_device(args.local_rank)

