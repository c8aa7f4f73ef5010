# ACL403: calls are followed into nested functions and through `self.` methods, and
# an `if` around a def does not guard the calls inside its body.
import os

import torch as th
import torch.distributed as dist
from torch.nn.parallel.distributed import DistributedDataParallel as DDP


class TrainLoop:
    """The shape of improved-diffusion's train_util.py: `run_loop` is called from
    another file, `save` defines and calls `save_checkpoint`."""

    def __init__(self, model, ema_rate):
        self.model = DDP(model)
        self.ema_rate = ema_rate
        self.step = 0

    def run_loop(self):
        while self.step < 10:
            self.step += 1
            if self.step % 5 == 0:
                self.save()

    def save(self):
        def save_checkpoint(rate, params):
            filename = f"ema_{rate}_{self.step:06d}.pt"
            with open(os.path.join("logs", filename), "wb") as f:
                th.save(params, f)  # ACL403

        save_checkpoint(0, self.model.state_dict())  # ACL411
        for rate in self.ema_rate:
            save_checkpoint(rate, self.model.state_dict())  # ACL411
        if dist.get_rank() == 0:
            with open(os.path.join("logs", f"opt{self.step:06d}.pt"), "wb") as f:
                th.save({}, f)
        dist.barrier()

    def save_guarded(self):
        def save_checkpoint(params):
            if dist.get_rank() == 0:
                th.save(params, "guarded.pt")

        save_checkpoint(self.model.state_dict())  # ACL411


def main(args):
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    model = th.nn.Linear(4, 2)
    if rank == 0:

        def save_best():
            # made on rank 0 only: the other ranks call the no-op below
            th.save(model.state_dict(), "best.pt")

    else:

        def save_best():
            th.save(model.state_dict(), f"best-{rank}.pt")

    save_best()
    if args.keep_last:

        def save_last():
            # the `if` around the def says nothing about the processes that call it
            th.save(model.state_dict(), "last.pt")  # ACL403

        save_last()
    if rank == 0:
        callbacks = [lambda: th.save(model.state_dict(), "callback.pt")]
    else:
        callbacks = []
    for callback in callbacks:
        callback()
