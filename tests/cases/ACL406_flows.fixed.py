# ACL406: the dashed spelling without a default; the local rank reaches the device
# through a copy (`args.gpu = args.local_rank`), a helper's parameter and an f-string.
# Writing LOCAL_RANK into the environment is not reading it.
import argparse
import os

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

parser = argparse.ArgumentParser(description="trainer")
parser.add_argument(
    "--local-rank",
    "--local_rank",
    type=int,
    help="local rank, set by the launcher",
    default=os.environ.get("LOCAL_RANK"),
)
parser.add_argument("--lr", type=float, default=0.1)
args = parser.parse_args()
os.environ["LOCAL_RANK"] = str(args.local_rank)


def setup(rank):
    torch.cuda.set_device(rank)
    dist.init_process_group("nccl")


args.gpu = args.local_rank
setup(args.local_rank)
model = torch.nn.Linear(8, 2).to(f"cuda:{args.gpu}")
model = DDP(model, device_ids=[args.gpu])
