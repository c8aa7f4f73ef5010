# The tuning guide's snippet: the mode passed by position raises TypeError.
import torch
from torch import compile as tc

MODE = "max-autotune"


def build(model, opts):
    fast = torch.compile(model, mode="reduce-overhead")
    faster = tc(model, mode=MODE, fullgraph=True)
    spread = torch.compile(
        model,
        mode="max-autotune-no-cudagraphs",
    )
    return fast, faster, spread


@torch.compile(None, mode="default")
def step(x):
    return x * 2
