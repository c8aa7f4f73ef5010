# A model file that scripts a helper but trains nothing, and `script` of another
# library: not reported.
import torch
from mylib import script


@torch.jit.script
def fused_gelu(x):
    return x * 0.5 * (1.0 + torch.erf(x / 1.41421))


@script
def helper(x):
    return x
