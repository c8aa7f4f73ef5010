# ACL401: DataParallel however it is imported, and a subclass of it; a lookalike from
# another library is not flagged. Three models wrapped in one file: the migration
# handles one, so no finding gets a fix.
import torch
import torch.nn as nn
import torch.nn.parallel as par
from torch.nn import DataParallel as DP

from mylib.parallel import DataParallel

net = nn.Linear(4, 2)
a = DP(net)  # ACL401
b = par.DataParallel(net)  # ACL401
c = torch.nn.parallel.data_parallel.DataParallel(net)  # ACL401
d = DataParallel(net)
unwrapped = d.module if isinstance(d, DataParallel) else d


class Replicated(nn.DataParallel):  # ACL401
    pass


def local(DP):
    return DP(net)
