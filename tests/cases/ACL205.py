# The tuning guide's snippet: the mode passed by position raises TypeError.
import torch
from torch import compile as tc

MODE = "max-autotune"


def build(model, opts):
    fast = torch.compile(model, "reduce-overhead")  # ACL205
    faster = tc(model, MODE, fullgraph=True)  # ACL205
    spread = torch.compile(  # ACL205
        model,
        "max-autotune-no-cudagraphs",
    )
    return fast, faster, spread


@torch.compile(None, "default")  # ACL205
def step(x):
    return x * 2
