# ACL403: the process group exists only on some runs, so the fix must not call
# get_rank() without one.
import argparse

import torch
import torch.distributed as dist

parser = argparse.ArgumentParser()
parser.add_argument("--distributed", action="store_true")
args = parser.parse_args()
if args.distributed:
    dist.init_process_group("gloo")
model = torch.nn.Linear(4, 2)
if not dist.is_initialized() or dist.get_rank() == 0:
    torch.save(model.state_dict(), "model.pt")
