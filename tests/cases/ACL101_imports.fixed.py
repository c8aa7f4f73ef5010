# ACL101: resolution through imports only, never by spelling.
import os

try:
    from torch.utils.data import DataLoader
except ImportError:  # optional dependency placeholder
    DataLoader = None

from torch.utils.data import *  # noqa: F403
import torch as th

first = DataLoader([1, 2, 3], num_workers=min(8, os.cpu_count() or 1))
second = th.utils.data.DataLoader([1, 2, 3], num_workers=min(8, os.cpu_count() or 1))
third = TensorDataset  # from the star import: not a call
suppressed = DataLoader([1, 2, 3])  # noqa: ACL101
all_suppressed = DataLoader([1, 2, 3])  # noqa
