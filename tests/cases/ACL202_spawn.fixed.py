# Each spawned process trains: the setting goes at the start of the worker function,
# because spawned workers never run the parent's `__main__` block.
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


def main_worker(rank, world_size):
    torch.backends.cudnn.benchmark = True
    dist.init_process_group("nccl", rank=rank, world_size=world_size)
    torch.cuda.set_device(rank)
    model = DDP(nn.Conv2d(3, 3, 3).cuda(rank), device_ids=[rank])
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(10):
        model(torch.randn(4, 3, 16, 16).cuda(rank)).sum().backward()
        opt.step()
    dist.destroy_process_group()


def main():
    world_size = torch.cuda.device_count()
    mp.spawn(main_worker, args=(world_size,), nprocs=world_size)


if __name__ == "__main__":
    main()
