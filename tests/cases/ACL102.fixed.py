# Edge cases of ACL102 in a file that moves batches to the GPU.
import torch
from torch.utils.data import DataLoader

PIN = True
model = torch.nn.Linear(3, 1).cuda()
ds = torch.utils.data.TensorDataset(torch.randn(64, 3))

a = DataLoader(ds, num_workers=2, pin_memory=True)
b = DataLoader(ds, num_workers=2, pin_memory=True)
c = DataLoader(ds, num_workers=2, pin_memory=PIN)
d = DataLoader(
    ds,
    num_workers=2,
    pin_memory=True,
)
cfg = {"num_workers": 2, "pin_memory": True}
e = DataLoader(ds, **cfg)

ok1 = DataLoader(ds, num_workers=2, pin_memory=True)
ok2 = DataLoader(ds, 8, False, None, None, 2, None, True)


def make(pin):
    return DataLoader(ds, num_workers=2, pin_memory=pin)
