# target-torch: 2.4
# ACL304: every import form of the deprecated torch.cuda.amp / torch.cpu.amp API.
import torch
import torch.cuda.amp as cuda_amp
from torch.cuda.amp import GradScaler, autocast
from torch.cuda.amp import custom_bwd, custom_fwd

from mylib.amp import autocast as my_autocast


class Double(torch.autograd.Function):
    @staticmethod
    @custom_fwd  # ACL304
    def forward(ctx, x):
        return x * 2

    @staticmethod
    @custom_bwd  # ACL304
    def backward(ctx, grad):
        return grad * 2


model = torch.nn.Linear(4, 1)
scaler = GradScaler(2.0**12, 2.0, 0.5, 1000, False)  # ACL304
second = cuda_amp.GradScaler(enabled=False)  # ACL304

with autocast(False, torch.float16, False):  # ACL304
    out = model(torch.randn(2, 4))
with torch.cuda.amp.autocast(enabled=False):  # ACL304
    out = model(torch.randn(2, 4))
with torch.cpu.amp.autocast():  # ACL304
    out = model(torch.randn(2, 4))
with torch.cuda.amp.autocast(  # ACL304
    dtype=torch.bfloat16,
    enabled=False,
):
    out = model(torch.randn(2, 4))


@torch.cuda.amp.autocast(enabled=False)  # ACL304
def forward(x):
    return model(x)


# should not flag: the new API, another library's autocast, type tests, annotations
with torch.amp.autocast("cuda", enabled=False), my_autocast():
    out = model(torch.randn(2, 4))


def is_scaler(obj: torch.cuda.amp.GradScaler) -> bool:
    return isinstance(obj, torch.cuda.amp.GradScaler)
