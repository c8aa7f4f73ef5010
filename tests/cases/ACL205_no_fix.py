# Positional arguments after the model that the fix cannot name: reported without a fix.
import torch


def build(model, args):
    a = torch.compile(model, "inductor")  # ACL205
    b = torch.compile(model, args.mode)  # ACL205
    c = torch.compile(model, "fast")  # ACL205
    d = torch.compile(model, "default", True)  # ACL205
    return a, b, c, d


ok = torch.compile(torch.nn.Linear(2, 2), mode="reduce-overhead")
ok2 = torch.compile(torch.nn.Linear(2, 2), backend="inductor")
