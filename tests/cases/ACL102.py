# Edge cases of ACL102 in a file that moves batches to the GPU.
import torch
from torch.utils.data import DataLoader

PIN = False
model = torch.nn.Linear(3, 1).cuda()
ds = torch.utils.data.TensorDataset(torch.randn(64, 3))

a = DataLoader(ds, num_workers=2)  # ACL102 ACL106
b = DataLoader(ds, num_workers=2, pin_memory=False)  # ACL102 ACL106
c = DataLoader(ds, num_workers=2, pin_memory=PIN)  # ACL102 ACL106
d = DataLoader(  # ACL102 ACL106
    ds,
    num_workers=2,
)
cfg = {"num_workers": 2, "pin_memory": False}
e = DataLoader(ds, **cfg)  # ACL102 ACL106

ok1 = DataLoader(ds, num_workers=2, pin_memory=True)  # ACL106
ok2 = DataLoader(ds, 8, False, None, None, 2, None, True)  # ACL106


def make(pin):
    return DataLoader(ds, num_workers=2, pin_memory=pin)  # ACL106
