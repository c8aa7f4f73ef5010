# ACL410 without a fix: the discriminator's wrap (in a helper above the import, which
# runs after it) passes an apex option torch's DDP has no counterpart for. The
# generator's wrap could be rewritten alone, but the import would then have to stay for
# the discriminator, or go and leave its name undefined: every wrap is rewritten, or
# none. A use of the wrapper that is not a wrap (`isinstance`) holds the rest back too.
import argparse

import torch
import torch.distributed as dist
import torch.nn as nn


def wrap_discriminator(discriminator):
    return DistributedDataParallel(discriminator, shared_param=True)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--local_rank", type=int, default=0)
    args = parser.parse_args()
    dist.init_process_group("nccl")
    torch.cuda.set_device(args.local_rank)
    generator = DistributedDataParallel(nn.Linear(16, 32).cuda())
    discriminator = wrap_discriminator(nn.Linear(32, 1).cuda())
    return generator, discriminator


from apex.parallel import DistributedDataParallel  # noqa: E402

if __name__ == "__main__":
    main()
