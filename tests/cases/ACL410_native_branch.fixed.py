# ACL410: timm's train.py shape (NVIDIA's GPUNet too): apex's DDP in one branch, torch's
# in the other; the fix takes the device the script gives torch's.
import torch
from torch.nn.parallel import DistributedDataParallel as NativeDDP


def wrap(args, model, use_amp):
    if args.distributed:
        if use_amp == "apex":
            model = NativeDDP(model, device_ids=[args.device])
        else:
            model = NativeDDP(model, device_ids=[args.device])
    return model


if __name__ == "__main__":
    torch.distributed.init_process_group("nccl")
