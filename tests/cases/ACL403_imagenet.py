# ACL403: pytorch/examples' ImageNet shape: mp.spawn workers, args.rank computed
# from the node rank, one checkpoint per node on purpose.
import argparse
import os

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

parser = argparse.ArgumentParser()
parser.add_argument("--rank", default=-1, type=int)
parser.add_argument("--dist-url", default="env://")
parser.add_argument("--multiprocessing-distributed", action="store_true")
args = parser.parse_args()


def save_checkpoint(state, filename="checkpoint.pth.tar"):
    torch.save(state, filename)


def main_worker(gpu, ngpus_per_node, args):
    if args.dist_url == "env://" and args.rank == -1:
        args.rank = int(os.environ["RANK"])
    if args.multiprocessing_distributed:
        args.rank = args.rank * ngpus_per_node + gpu
    dist.init_process_group("gloo", init_method=args.dist_url, rank=args.rank)
    model = torch.nn.Linear(4, 2)
    for epoch in range(3):
        if not args.multiprocessing_distributed or (
            args.multiprocessing_distributed and args.rank % ngpus_per_node == 0
        ):
            save_checkpoint({"epoch": epoch, "state_dict": model.state_dict()})
    torch.save(model.state_dict(), "final.pth")  # ACL403


if __name__ == "__main__":
    mp.spawn(main_worker, nprocs=2, args=(2, args))
