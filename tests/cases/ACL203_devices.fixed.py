# ACL203: which `.to(<device>)` moves to an accelerator. A variable counts when the
# file shows it names one; a file that never touches one leaves `.device` unknown.
import argparse

import torch
from other import Dtype

parser = argparse.ArgumentParser()
parser.add_argument("--device", default="cuda")
parser.add_argument("--precision", default="fp32")
args = parser.parse_args()
cpu = torch.device("cpu")


def get_device():
    return torch.device("cuda:0") if torch.cuda.is_available() else torch.device("cpu")


def build(dtype):
    a = torch.zeros(3, device=args.device)
    b = torch.zeros(3, device=get_device())
    c = torch.zeros(3, device=f"cuda:{0}")
    d = torch.zeros(3).to(cpu)
    e = torch.zeros(3).to(dtype)
    f = torch.zeros(3).to(Dtype.HALF)
    g = torch.zeros(3).to(args.precision)
    return a, b, c, d, e, f, g
