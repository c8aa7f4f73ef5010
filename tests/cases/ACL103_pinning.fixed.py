# ACL103: the ways a loader pins memory, and loaders that do not.
import argparse

import torch
from torch.utils.data import DataLoader

parser = argparse.ArgumentParser()
parser.add_argument("--pin-mem", action="store_true")
parser.add_argument("--no-pin-mem", action="store_false", dest="pin_mem")
parser.set_defaults(pin_mem=True)
parser.add_argument("--pin-optional", action="store_true")
args = parser.parse_args()
use_cuda = torch.cuda.is_available()
device = torch.device("cuda" if use_cuda else "cpu")


def by_device_test(dataset):
    loader = DataLoader(dataset, batch_size=8, num_workers=2, pin_memory=use_cuda)
    for x, y in loader:
        x = x.to(device, non_blocking=True)


def by_argparse_default(dataset):
    loader = DataLoader(dataset, batch_size=8, num_workers=2, pin_memory=args.pin_mem)
    for x, y in loader:
        x = x.to(device, non_blocking=True)


def by_kwargs_on_cuda(dataset):
    kwargs = {"batch_size": 8}
    if use_cuda:
        kwargs.update({"num_workers": 1, "pin_memory": True})
    loader = DataLoader(dataset, **kwargs)
    for x, y in loader:
        x = x.to(device, non_blocking=True)


def by_comparison(dataset):
    loader = DataLoader(dataset, batch_size=8, num_workers=2, pin_memory=device.type == "cuda")
    for x, y in loader:
        x = x.to(device, non_blocking=True)


# Not flagged: these loaders do not pin memory (ACL102's business), or may not.
def unpinned(dataset):
    loader = DataLoader(dataset, batch_size=8, num_workers=2)
    for x, y in loader:
        x = x.to(device)
    optional = DataLoader(dataset, batch_size=8, num_workers=2, pin_memory=args.pin_optional)
    for x, y in optional:
        x = x.to(device)
    off = DataLoader(dataset, batch_size=8, num_workers=2, pin_memory=False)
    for x, y in off:
        x = x.to(device)
