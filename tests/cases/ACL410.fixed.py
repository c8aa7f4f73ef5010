# ACL410: apex's own example (examples/simple/distributed): apex amp with apex's DDP,
# the device set from `--local_rank`. The fix uses torch's DDP on that device and drops
# the apex import it no longer needs (apex amp stays).
import argparse
import os

import torch
from apex import amp

# FOR DISTRIBUTED: (can also use torch.nn.parallel.DistributedDataParallel instead)

parser = argparse.ArgumentParser()
parser.add_argument("--local_rank", default=os.getenv("LOCAL_RANK", 0), type=int)
args = parser.parse_args()

args.distributed = False
if "WORLD_SIZE" in os.environ:
    args.distributed = int(os.environ["WORLD_SIZE"]) > 1

if args.distributed:
    torch.cuda.set_device(args.local_rank)
    torch.distributed.init_process_group(backend="nccl", init_method="env://")

model = torch.nn.Linear(1024, 16).cuda()
optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
model, optimizer = amp.initialize(model, optimizer, opt_level="O1")

if args.distributed:
    model = torch.nn.parallel.DistributedDataParallel(
        model, device_ids=[args.local_rank]
    )
