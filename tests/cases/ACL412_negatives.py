# ACL412 negatives: a location chosen (keyword, positional, a callable), a load on rank
# 0 only, a cache of preprocessed features, and arguments it cannot read.
import torch
import torch.distributed as dist


def main(args, load_kwargs):
    dist.init_process_group("nccl")
    rank = dist.get_rank()
    a = torch.load(args.ckpt, map_location="cpu")
    b = torch.load(args.ckpt, f"cuda:{args.local_rank}")
    c = torch.load(args.ckpt, map_location=lambda storage, loc: storage)
    if rank == 0:
        d = torch.load(args.ckpt)
    features = torch.load(args.cached_features_file)
    e = torch.load(args.ckpt, **load_kwargs)
    return a, b, c, d, features, e


def resume(args, model, optimizer):
    # pytorch/examples' ImageNet shape: one process driving all GPUs loads as saved,
    # one process per GPU maps onto its own
    if args.gpu is None:
        checkpoint = torch.load(args.resume)
    else:
        checkpoint = torch.load(args.resume, map_location=f"cuda:{args.gpu}")
    model.load_state_dict(checkpoint["state_dict"])
    # one file per rank: each process reads back what it saved
    queue_path = f"queue{dist.get_rank()}.pth"
    queue = torch.load(queue_path)["queue"]
    memory = torch.load("mb" + str(args.rank) + ".pth")
    return queue, memory
