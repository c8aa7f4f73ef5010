# ACL401: DataParallel however it is imported, and a subclass of it; a lookalike from
# another library is not flagged. Three models wrapped in one file: the migration
# handles one, so no finding gets a fix.
import torch
import torch.nn as nn
import torch.nn.parallel as par
from torch.nn import DataParallel as DP

from mylib.parallel import DataParallel

net = nn.Linear(4, 2)
a = DP(net)
b = par.DataParallel(net)
c = torch.nn.parallel.data_parallel.DataParallel(net)
d = DataParallel(net)
unwrapped = d.module if isinstance(d, DataParallel) else d


class Replicated(nn.DataParallel):
    pass


def local(DP):
    return DP(net)
