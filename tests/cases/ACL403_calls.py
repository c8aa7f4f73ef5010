# ACL403: a save inside a function is judged by the function's call sites in the file.
import fire
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel as DDP

model = torch.nn.Linear(4, 2)


def save_guarded_everywhere():
    torch.save(model, "a.pt")


def save_sometimes_unguarded():
    torch.save(model, "b.pt")  # ACL403


def save_through_a_guarded_caller():
    torch.save(model, "c.pt")


def guarded_caller():
    save_through_a_guarded_caller()


def save_through_an_unguarded_caller():
    torch.save(model, "d.pt")  # ACL403


def unguarded_caller():
    save_through_an_unguarded_caller()


def save_recursively(depth):
    if depth:
        save_recursively(depth - 1)
    torch.save(model, "e.pt")


def save_callback():
    # handed by every rank to code the rule does not follow
    torch.save(model, "f.pt")  # ACL403


def never_called():
    # its callers are in another file: judged by its own body
    torch.save(model, "g.pt")  # ACL403


class Trainer:
    def __init__(self, rank):
        self.rank = rank
        self.model = DDP(model)
        self.hooks = [self._hooked]

    def _snapshot(self, epoch):
        torch.save(self.model.module.state_dict(), f"snapshot_{epoch % 2}.pt")

    def _checkpoint(self):
        torch.save(self.model.module.state_dict(), "checkpoint.pt")  # ACL403

    def _hooked(self):
        # registered in __init__, which every rank runs
        torch.save(self.model.module.state_dict(), "hooked.pt")  # ACL403

    def train(self, epochs):
        for epoch in range(epochs):
            if self.rank == 0 and epoch % 10 == 0:
                self._snapshot(epoch)
            self._checkpoint()


class TutorialTrainer:
    """The guard tests a parameter its caller fills with the rank (the shape of the
    PyTorch DDP tutorial series' multigpu.py)."""

    def __init__(self, gpu_id):
        self.gpu_id = gpu_id

    def _save(self):
        torch.save(model, "tutorial.pt")

    def train(self):
        if self.gpu_id == 0:
            self._save()


def evaluate(index):
    # mp.spawn passes the process index first, whatever the parameter is called
    if index == 0:
        torch.save(model, "eval.pt")


def worker(rank, world_size):
    dist.init_process_group("gloo", rank=rank, world_size=world_size)
    torch.save(model, "worker.pt")  # ACL403
    trainer = Trainer(rank)
    trainer.train(3)
    TutorialTrainer(rank).train()
    if rank == 0:
        save_guarded_everywhere()
        guarded_caller()
        save_sometimes_unguarded()
        save_recursively(2)
    save_sometimes_unguarded()
    unguarded_caller()
    register(save_callback)


def main(path="model.pt"):
    dist.init_process_group("gloo")
    torch.save(model, path)  # ACL403


def register(callback):
    callback()


if __name__ == "__main__":
    if dist.get_rank() == 0:
        save_guarded_everywhere()
    mp.spawn(worker, args=(2,), nprocs=2)
    mp.spawn(evaluate, nprocs=2)
    fire.Fire(main)
