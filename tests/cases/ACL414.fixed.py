# ACL414: init_process_group(rank=<local rank>) where the world may span nodes.
import argparse
import os

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def setup_torchrun():
    local_rank = int(os.environ["LOCAL_RANK"])
    dist.init_process_group("nccl", rank=local_rank)
    torch.cuda.set_device(local_rank)


def setup_env():
    dist.init_process_group(
        backend="nccl",
        init_method="env://",
        world_size=int(os.environ["WORLD_SIZE"]),
        rank=int(os.environ["LOCAL_RANK"]),
    )


def worker(gpu, args):
    dist.init_process_group("nccl", rank=gpu, world_size=args.nodes * args.gpus)


def parse():
    parser = argparse.ArgumentParser()
    parser.add_argument("--local_rank", type=int, default=0)
    parser.add_argument("--world-size", type=int, default=1)
    return parser.parse_args()


def launched():
    args = parse()
    dist.init_process_group("nccl", rank=args.local_rank, world_size=args.world_size)


# Not flagged: a global rank computed from the node rank, RANK under torchrun, and a
# world of one machine's devices.
def node_rank_worker(gpu, args):
    rank = args.node_rank * args.gpus + gpu
    dist.init_process_group("nccl", rank=rank, world_size=args.nodes * args.gpus)


def global_rank():
    dist.init_process_group("nccl", rank=int(os.environ["RANK"]))


def one_machine(rank, world_size):
    dist.init_process_group("gloo", rank=rank, world_size=world_size)


def main():
    args = parse()
    mp.spawn(worker, args=(args,), nprocs=args.gpus)
    mp.spawn(node_rank_worker, args=(args,), nprocs=args.gpus)
    world_size = torch.cuda.device_count()
    for rank in range(world_size):
        one_machine(rank, world_size)


def spawned_single_node(index, world_size):
    dist.init_process_group("nccl", rank=index, world_size=torch.cuda.device_count())

