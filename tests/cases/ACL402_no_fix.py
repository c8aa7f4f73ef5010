# ACL402: flagged, but a decorator on forward would reach further than the flagged calls,
# so no fix is offered (the message says why).
import argparse

import torch
import torch.nn as nn

parser = argparse.ArgumentParser()
parser.add_argument("--bf16", action="store_true")
args = parser.parse_args()
bf16 = torch.bfloat16


class Twice(nn.Module):
    def forward(self, x):
        return 2 * x


class Shared(nn.Module):
    def forward(self, x):
        return x + 1


class Base(nn.Module):
    def forward(self, x):
        return x - 1


class Child(Base):
    pass


class Runtime(nn.Module):
    def forward(self, x):
        return x / 2


class Aliased(nn.Module):
    def forward(self, x):
        return x * x


x = torch.randn(4, 4).cuda()  # ACL203
twice = nn.DataParallel(Twice())  # ACL401
shared = nn.DataParallel(Shared())  # ACL401
spare = Shared()
child = nn.DataParallel(Child())  # ACL401
runtime = nn.DataParallel(Runtime())  # ACL401
aliased = nn.DataParallel(Aliased())  # ACL401

with torch.autocast("cuda", dtype=torch.bfloat16):
    twice(x)  # ACL402
with torch.autocast("cuda", dtype=torch.bfloat16, cache_enabled=False):
    twice(x)  # ACL402
with torch.autocast("cuda", dtype=torch.bfloat16):
    shared(x)  # ACL402
    child(x)  # ACL402
with torch.autocast("cuda", dtype=torch.bfloat16, enabled=args.bf16):
    runtime(x)  # ACL402
with torch.autocast("cuda", dtype=bf16):
    aliased(x)  # ACL402
