# ACL410: a GAN whose generator and discriminator are both wrapped with apex's DDP,
# imported locally where the script goes distributed. Every wrap is rewritten and the
# local import, now unused, is dropped.
import argparse

import torch
import torch.distributed as dist
import torch.nn as nn


def build(args):
    generator = nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 32)).cuda()
    discriminator = nn.Sequential(nn.Linear(32, 64), nn.LeakyReLU(0.2), nn.Linear(64, 1)).cuda()
    if args.distributed:

        torch.cuda.set_device(args.local_rank)
        generator = nn.parallel.DistributedDataParallel(generator, device_ids=[args.local_rank])
        discriminator = nn.parallel.DistributedDataParallel(
            discriminator, device_ids=[args.local_rank]
        )
    return generator, discriminator


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--local_rank", type=int, default=0)
    args = parser.parse_args()
    args.distributed = dist.is_available() and dist.is_torchelastic_launched()
    if args.distributed:
        dist.init_process_group("nccl")
    generator, discriminator = build(args)
    return generator, discriminator


if __name__ == "__main__":
    main()
