# ACL406 negative: the option's default already reads the environment (NVIDIA's BERT
# scripts), so the script runs under torchrun as it is.
import argparse
import os

import torch

parser = argparse.ArgumentParser()
parser.add_argument("--local_rank", type=int, default=os.getenv("LOCAL_RANK", -1))
args = parser.parse_args()
if args.local_rank != -1:
    torch.cuda.set_device(args.local_rank)
