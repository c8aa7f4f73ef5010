# ACL102 is not reported in a file that never touches an accelerator.
import torch
from torch.utils.data import DataLoader

loader = DataLoader(torch.arange(10), num_workers=2)  # ACL106
for batch in loader:
    print(batch.to("cpu"))
