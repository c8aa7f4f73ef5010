# ACL101: resolution through imports only, never by spelling.
try:
    from torch.utils.data import DataLoader
except ImportError:  # optional dependency placeholder
    DataLoader = None

from torch.utils.data import *  # noqa: F403
import torch as th

first = DataLoader([1, 2, 3])  # ACL101
second = th.utils.data.DataLoader([1, 2, 3], num_workers=0)  # ACL101
third = TensorDataset  # from the star import: not a call
suppressed = DataLoader([1, 2, 3])  # noqa: ACL101
all_suppressed = DataLoader([1, 2, 3])  # noqa
