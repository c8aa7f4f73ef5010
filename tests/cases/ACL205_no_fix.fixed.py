# Positional arguments after the model that the fix cannot name: reported without a fix.
import torch


def build(model, args):
    a = torch.compile(model, "inductor")
    b = torch.compile(model, args.mode)
    c = torch.compile(model, "fast")
    d = torch.compile(model, "default", True)
    return a, b, c, d


ok = torch.compile(torch.nn.Linear(2, 2), mode="reduce-overhead")
ok2 = torch.compile(torch.nn.Linear(2, 2), backend="inductor")
