# ACL403: functions and methods the file never calls are judged by their own body
# (the utils.py of timm/DeiT/ConvNeXt, a model class whose callers are elsewhere).
import atexit
import os

import torch
import torch.distributed as dist
from basicsr.utils.dist_util import master_only


def is_dist_avail_and_initialized():
    return dist.is_available() and dist.is_initialized()


def get_rank():
    if not is_dist_avail_and_initialized():
        return 0
    return dist.get_rank()


def is_main_process():
    return get_rank() == 0


def init_distributed_mode(args):
    args.rank = int(os.environ["RANK"])
    dist.init_process_group("nccl", rank=args.rank)


def save_on_master(*args, **kwargs):
    torch.save(*args, **kwargs)  # ACL403


def save_on_master_guarded(*args, **kwargs):
    if is_main_process():
        torch.save(*args, **kwargs)


def save_shard(*args, **kwargs):
    # its one caller writes one file per rank
    torch.save(*args, **kwargs)


def save_model(model, epoch, output_dir):
    save_shard(model.state_dict(), f"{output_dir}/shard-{get_rank()}.pth")
    save_on_master(model.state_dict(), f"{output_dir}/checkpoint-{epoch}.pth")


class BaseModel:
    def __init__(self, net):
        self.net = net

    def save_network(self, net_label, current_iter):
        save_path = os.path.join("models", f"{net_label}_{current_iter}.pth")
        torch.save(self.net.state_dict(), save_path)  # ACL403

    @master_only
    def save_training_state(self, current_iter):
        torch.save({"iter": current_iter}, f"{current_iter}.state")

    def __call__(self, path):
        # `model(path)` runs this: its callers cannot be seen
        torch.save(self.net.state_dict(), path)


def save_at_exit():
    torch.save({}, "exit.pt")  # ACL403


def save_at_exit_on_master():
    torch.save({}, "exit-master.pt")


atexit.register(save_at_exit)
if is_main_process():
    atexit.register(save_at_exit_on_master)


class Checkpointer:
    def __init__(self, net):
        self.net = net

    def save(self):
        torch.save(self.net.state_dict(), "checkpoint.pt")

    def run(self):
        if is_main_process():
            self.save()


class Options:
    def __init__(self, hooks):
        # another class's `self.save`: not a use of Checkpointer.save
        self.save = False
        hooks.append(self.save)
