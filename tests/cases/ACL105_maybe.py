# ACL105 is reported only for what certainly raises: a sampler that may be None on
# single-process runs, a worker count or flag the file does not fix, or a
# DataLoader from another library.
import torch
from mylib import DataLoader as OtherLoader
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler


def build(dataset, distributed, workers, persistent, make_sampler):
    sampler = DistributedSampler(dataset) if distributed else None
    a = DataLoader(dataset, batch_size=8, shuffle=True, sampler=sampler, num_workers=2)
    if distributed:
        other = DistributedSampler(dataset)
    else:
        other = None
    b = DataLoader(dataset, batch_size=8, shuffle=True, sampler=other, num_workers=2)
    c = DataLoader(dataset, shuffle=True, sampler=make_sampler(dataset), num_workers=2)
    d = DataLoader(dataset, batch_size=8, num_workers=workers, persistent_workers=True)
    e = DataLoader(dataset, batch_size=8, persistent_workers=persistent)  # noqa: ACL101
    f = OtherLoader(dataset, shuffle=True, sampler=DistributedSampler(dataset))
    g = DataLoader(dataset, shuffle=not distributed, sampler=sampler, num_workers=2)
    always = DistributedSampler(dataset)
    h = DataLoader(dataset, shuffle=True, sampler=always, num_workers=2)  # ACL105
    return a, b, c, d, e, f, g, h


def from_kwargs(dataset):
    kwargs = {"batch_size": 8, "persistent_workers": True}
    return DataLoader(dataset, **kwargs)  # noqa: ACL101  # ACL105
