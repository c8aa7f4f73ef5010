# ACL414: the world size that `mp.spawn(args=...)` hands over decides.
import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def one_machine(rank, world_size):
    dist.init_process_group("nccl", rank=rank, world_size=world_size)


def many_machines(gpu, world_size):
    dist.init_process_group("nccl", rank=gpu, world_size=world_size)  # ACL414


def main(args):
    n_gpus = torch.cuda.device_count()
    mp.spawn(one_machine, args=(n_gpus,), nprocs=n_gpus)
    mp.spawn(many_machines, args=(args.nodes * n_gpus,), nprocs=n_gpus)
