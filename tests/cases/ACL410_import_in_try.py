# ACL410: NVIDIA's BERT scripts: apex's DDP imported where it is used, in a `try:`
# that only explains how to install apex. The fix removes the whole `try:`; the rank's
# device is `args.local_rank`, set only when the device is CUDA.
import argparse

import torch


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--local_rank", type=int, default=-1)  # ACL406
    args = parser.parse_args()
    if args.local_rank == -1:
        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    else:
        torch.cuda.set_device(args.local_rank)
        device = torch.device("cuda", args.local_rank)
        torch.distributed.init_process_group(backend="nccl")
    model = torch.nn.Linear(8, 2).to(device)
    if args.local_rank != -1:
        try:
            from apex.parallel import DistributedDataParallel as DDP
        except ImportError:
            raise ImportError("Please install apex from https://www.github.com/nvidia/apex")
        model = DDP(model, delay_allreduce=True)  # ACL410
    return model


if __name__ == "__main__":
    main()
