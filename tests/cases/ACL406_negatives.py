# ACL406 negatives: options that already fall back on LOCAL_RANK, options that are
# declared for the launcher but never pick the device, and a `local_rank` that is not
# an argparse option.
import argparse
import os

import torch
import torch.distributed as dist


def get_args():
    parser = argparse.ArgumentParser()
    parser.add_argument("--local_rank", default=0, type=int, help="Please ignore and do not set this argument.")
    parser.add_argument("--local-rank-log", default="", type=str)
    return parser.parse_args()


def init_distributed_mode(args):
    # torchrun: the environment; the option stays for torch.distributed.launch
    if "LOCAL_RANK" in os.environ:
        args.gpu = int(os.environ["LOCAL_RANK"])
    else:
        args.gpu = args.local_rank
    torch.cuda.set_device(args.gpu)
    dist.init_process_group("nccl")


if __name__ == "__main__":
    init_distributed_mode(get_args())


class Trainer:
    def __init__(self, local_rank):
        self.local_rank = local_rank
        self.device = torch.device("cuda", local_rank)
