# Edge cases of ACL101: how num_workers is passed, and how DataLoader is named.
import argparse
import os

import torch
import torchvision
import torch.utils.data as tud
from torch.utils.data import DataLoader
from torch.utils.data import DataLoader as DL
from torch.utils.data.dataloader import DataLoader as InnerDL

WORKERS = min(8, os.cpu_count() or 1)
SOME_WORKERS = 4

parser = argparse.ArgumentParser()
parser.add_argument("--workers", "-j", type=int, default=min(8, os.cpu_count() or 1))
parser.add_argument("--val-workers", type=int, default=min(8, os.cpu_count() or 1))
parser.add_argument("--threads", type=int, default=4)
parser.add_argument("--loader-workers", dest="lw", type=int)
args = parser.parse_args()

ds = torchvision.datasets.ImageFolder("data/train", transform=torchvision.transforms.ToTensor())

# should flag
a = DataLoader(ds, num_workers=min(8, os.cpu_count() or 1))
b = DL(ds, batch_size=8, num_workers=min(8, os.cpu_count() or 1))
c = tud.DataLoader(ds, 8, True, None, None, min(8, os.cpu_count() or 1))
d = InnerDL(ds, num_workers=WORKERS)
e = torch.utils.data.DataLoader(
    ds,
    batch_size=8,
    num_workers=args.workers,
)
f = DataLoader(ds, num_workers=args.val_workers)
kwargs = {"batch_size": 8, "shuffle": True}
g = DataLoader(ds, **kwargs, num_workers=min(8, os.cpu_count() or 1))
zero_kwargs = dict(batch_size=8, num_workers=min(8, os.cpu_count() or 1))
h = DataLoader(ds, **zero_kwargs)

# should not flag
ok1 = DataLoader(ds, num_workers=2)
ok2 = DataLoader(ds, num_workers=SOME_WORKERS)
ok3 = DataLoader(ds, num_workers=args.threads)
ok4 = DataLoader(ds, num_workers=args.lw)  # no default: None is not 0
ok5 = DataLoader(ds, *[8, True])
unknown = {}
unknown.update(vars(args))
ok6 = DataLoader(ds, **unknown)


def build(dataset, workers=0):
    return DataLoader(dataset, num_workers=workers)  # a parameter: unknown


def shadowed(DataLoader):
    return DataLoader(ds)


class Loader:
    def make(self):
        DL = list  # local rebinding
        return DL(ds)


if __name__ == "__main__":
    for images, labels in a:
        print(images.shape, labels[:4])
