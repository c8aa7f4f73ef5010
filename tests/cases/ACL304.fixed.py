# target-torch: 2.4
# ACL304: every import form of the deprecated torch.cuda.amp / torch.cpu.amp API.
import torch
import torch.amp as cuda_amp
from torch.amp import GradScaler, autocast
from torch.amp import custom_bwd, custom_fwd

from mylib.amp import autocast as my_autocast


class Double(torch.autograd.Function):
    @staticmethod
    @custom_fwd(device_type="cuda")
    def forward(ctx, x):
        return x * 2

    @staticmethod
    @custom_bwd(device_type="cuda")
    def backward(ctx, grad):
        return grad * 2


model = torch.nn.Linear(4, 1)
scaler = GradScaler("cuda", 2.0**12, 2.0, 0.5, 1000, False)
second = cuda_amp.GradScaler("cuda", enabled=False)

with autocast("cuda", enabled=False, dtype=torch.float16, cache_enabled=False):
    out = model(torch.randn(2, 4))
with torch.amp.autocast("cuda", enabled=False):
    out = model(torch.randn(2, 4))
with torch.amp.autocast("cpu"):
    out = model(torch.randn(2, 4))
with torch.amp.autocast(
    "cuda",
    dtype=torch.bfloat16,
    enabled=False,
):
    out = model(torch.randn(2, 4))


@torch.amp.autocast("cuda", enabled=False)
def forward(x):
    return model(x)


# should not flag: the new API, another library's autocast, type tests, annotations
with torch.amp.autocast("cuda", enabled=False), my_autocast():
    out = model(torch.randn(2, 4))


def is_scaler(obj: torch.cuda.amp.GradScaler) -> bool:
    return isinstance(obj, torch.cuda.amp.GradScaler)
