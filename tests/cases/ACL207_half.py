# A model trained in half precision, and one switched by an `--fp16` option: not
# float32 training, not reported.
import argparse

import torch
import torch.nn as nn

parser = argparse.ArgumentParser()
parser.add_argument("--fp16", action="store_true")
args = parser.parse_args()

model = nn.Linear(512, 512).cuda()
if args.fp16:
    model = model.half()
opt = torch.optim.SGD(model.parameters(), lr=0.01)
for _ in range(10):
    model(torch.randn(64, 512).cuda()).pow(2).mean().backward()  # ACL203
    opt.step()
