# ACL412: a DDP script that resumes from a checkpoint and loads pretrained weights on
# every rank without `map_location`.
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def load_pretrained(model, path):
    model.load_state_dict(torch.load(path))  # ACL412


def main(args):
    dist.init_process_group("nccl")
    torch.cuda.set_device(args.local_rank)
    model = torch.nn.Linear(8, 2).cuda()
    load_pretrained(model, args.pretrained)
    model = DDP(model, device_ids=[args.local_rank])
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    if args.resume:
        checkpoint = torch.load(  # ACL412
            args.resume,
            weights_only=True,
        )
        model.module.load_state_dict(checkpoint["model"])
        optimizer.load_state_dict(checkpoint["optimizer"])
