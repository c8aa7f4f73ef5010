# ACL403: what uses the saved file right after the save goes under the same guard: a
# copy of the best checkpoint, the rename that makes an atomic save, a log line
# naming the path. Statements that do anything else stay on every rank.
import logging
import os
import shutil

import torch
import torch.distributed as dist

logger = logging.getLogger(__name__)


def save_checkpoint(state, is_best, output_dir, filename="checkpoint.pth.tar"):
    path = os.path.join(output_dir, filename)
    if dist.get_rank() == 0:
        torch.save(state, path)
        if is_best:
            shutil.copyfile(path, os.path.join(output_dir, "model_best.pth.tar"))


def atomic_save(obj, path):
    tmp = path + ".tmp"
    # write then rename, so a reader never sees half a file
    if dist.get_rank() == 0:
        torch.save(obj, tmp)
        os.replace(tmp, path)
        logger.info("saved checkpoint to %s", path)


def save_and_track(model, epoch, history):
    # no fix: the copy further down uses the file on every rank, past a statement that
    # must stay there
    ckpt = f"checkpoints/epoch_{epoch:03d}.pt"
    torch.save(model.state_dict(), ckpt)
    print(f"saved {ckpt}")
    history.append(ckpt)  # every rank keeps its history: stays outside the guard
    shutil.copy(ckpt, "checkpoints/last.pt")


def save_then_other_file(model, stats, out):
    if dist.get_rank() == 0:
        torch.save(model.state_dict(), out)
    shutil.copyfile("config.yaml", "checkpoints/config.yaml")  # another file: not moved


def main():
    dist.init_process_group("nccl")
    model = torch.nn.Linear(8, 2)
    history = []
    for epoch in range(3):
        save_checkpoint({"state_dict": model.state_dict()}, epoch == 2, "checkpoints")
        atomic_save(model.state_dict(), "checkpoints/model.pt")
        save_and_track(model, epoch, history)
        save_then_other_file(model, {}, "checkpoints/final.pt")
    dist.destroy_process_group()
