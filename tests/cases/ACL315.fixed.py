# Emptying the allocator's cache: on every training step, and where it is harmless.
import torch
import torch.nn.functional as F
from torch.cuda import empty_cache

model = torch.nn.Linear(8, 2)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)


def train(loader, device):
    for x, y in loader:
        optimizer.zero_grad()
        F.cross_entropy(model(x.to(device)), y.to(device)).backward()
        optimizer.step()


def train_guarded(loader):
    for step, (x, y) in enumerate(loader):
        optimizer.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        del loss


def cleanup():
    pass


def train_with_cleanup(loader):
    for x, y in loader:
        F.cross_entropy(model(x), y).backward()
        optimizer.step()
        cleanup()


def train_accelerator(loader):
    for x, y in loader:
        F.cross_entropy(model(x), y).backward()
        optimizer.step()
        if x.device.type == "xpu":
            pass
        else:
            pass


# -- not reported --------------------------------------------------------------------


def train_periodic(loader):
    for step, (x, y) in enumerate(loader):
        F.cross_entropy(model(x), y).backward()
        optimizer.step()
        if step % 1000 == 0:
            torch.cuda.empty_cache()


def train_on_oom(loader):
    for x, y in loader:
        try:
            F.cross_entropy(model(x), y).backward()
        except torch.OutOfMemoryError:
            torch.cuda.empty_cache()
            continue
        optimizer.step()


def train_epochs(loader, epochs):
    for epoch in range(epochs):
        for x, y in loader:
            F.cross_entropy(model(x), y).backward()
            optimizer.step()
        torch.cuda.empty_cache()  # once per epoch


def validate(loader):
    with torch.no_grad():
        for x, y in loader:
            model(x)
            torch.cuda.empty_cache()  # an evaluation loop is not a training step


class Cache:
    def empty_cache(self):
        pass


def train_own_cache(loader, cache):
    for x, y in loader:
        F.cross_entropy(model(x), y).backward()
        optimizer.step()
        Cache().empty_cache()


class Net(torch.nn.Module):
    def __init__(self, width):
        super().__init__()
        self.layer = torch.nn.Linear(8, width)


def largest_batch(sizes, device):
    # trials, not steps: each iteration builds its own model and frees it for the next
    for batch_size in sizes:
        model = Net(batch_size).to(device)
        x = torch.randn(batch_size, 8, device=device)
        model.layer(x).sum().backward()
        del model, x
        torch.cuda.empty_cache()


def train_rebinding(model, loader, device):
    for x, y in loader:
        model = model.to(device)  # the same model: every step still empties the cache
        F.cross_entropy(model(x), y).backward()
        optimizer.step()
