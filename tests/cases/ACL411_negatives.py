# ACL411 negatives: the bare model saved (`.module`, `model_without_ddp`, the
# `model.module if hasattr(model, "module") else model` idiom, stylegan2's
# `g_module`), a state dict saved before the wrap, and unwrapped models.
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def main(args):
    dist.init_process_group("nccl")
    main_process = dist.get_rank() == 0
    model = torch.nn.Linear(8, 2).cuda()
    if main_process:
        torch.save(model.state_dict(), "init.pt")
    model_without_ddp = model
    model = DDP(model, device_ids=[args.gpu])
    model_to_save = model.module if hasattr(model, "module") else model
    generator = torch.nn.Linear(8, 8).cuda()
    if args.distributed:
        generator = DDP(generator, device_ids=[args.gpu])
        g_module = generator.module
    else:
        g_module = generator
    ema = torch.nn.Linear(8, 2).cuda()
    if main_process:
        torch.save(model.module.state_dict(), "a.pt")
        torch.save({"model": model_without_ddp.state_dict()}, "b.pt")
        torch.save(model_to_save.state_dict(), "c.pt")
        torch.save({"g": g_module.state_dict()}, "d.pt")
        torch.save([ema.state_dict()], "e.pt")


def save(model, path):
    # YOLOv4's shape: the script tests the wrapper itself
    if isinstance(model, torch.nn.DataParallel):
        torch.save(model.module.state_dict(), path)
    else:
        torch.save(model.state_dict(), path)
    bare = model.module.state_dict() if isinstance(model, DDP) else model.state_dict()
    torch.save(bare, path)


if __name__ == "__main__":
    net = torch.nn.DataParallel(torch.nn.Linear(2, 2))  # ACL401
    if dist.get_rank() == 0:
        save(net, "net.pt")
