# Compiles that run once: hoisted out of the loop, guarded by a step test, by a
# flag the code sets, by a cached attribute, by a cache dict, in a cached function,
# or over a list of different models. None is reported.
import functools

import torch
from torch import nn


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.mlp = nn.Linear(64, 64)
        self._compiled = None

    def forward(self, x):
        if self._compiled is None:
            self._compiled = torch.compile(self.mlp)
        return self._compiled(x)


class Cached(nn.Module):
    def forward(self, x):
        if not hasattr(self, "_fast"):
            self._fast = torch.compile(self.inner)
        return self._fast(x)


_CACHE = {}


def compiled(model):
    if model not in _CACHE:
        _CACHE[model] = torch.compile(model)
    return _CACHE[model]


@functools.lru_cache
def compiled_fn(fn):
    return torch.compile(fn)


def train(model, loader, optimizer, epochs, warmup):
    model = torch.compile(model)
    done = False
    for epoch in range(epochs):
        if epoch == warmup:
            model = torch.compile(model, mode="max-autotune")
        if not done:
            model = torch.compile(model)
            done = True
        for batch in loader:
            compiled(model)(batch).sum().backward()
            optimizer.step()


def benchmark(models, example):
    for name, model in models.items():
        fast = torch.compile(model)
        print(name, fast)
