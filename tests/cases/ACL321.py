# ACL321: binary cross-entropy on probabilities under CUDA autocast.
import torch
import torch.nn.functional as F
from torch import nn

model = nn.Linear(4, 1).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
criterion = nn.BCELoss()
summed = nn.BCELoss(reduction="sum")


def functional(loader):
    for x, y in loader:
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = F.binary_cross_entropy(torch.sigmoid(model(x)), y)  # ACL321
        loss.backward()
        opt.step()
        opt.zero_grad()


def criterion_object(loader, use_amp):
    for x, y in loader:
        with torch.autocast(device_type="cuda", dtype=torch.bfloat16, enabled=use_amp):
            loss = criterion(model(x).sigmoid(), y)  # ACL321
            loss_sum = summed(torch.sigmoid(model(x)), y)  # ACL321
        (loss + loss_sum).backward()
        opt.step()
        opt.zero_grad()


def probabilities(loader, net):
    for x, y in loader:
        with torch.amp.autocast("cuda", dtype=torch.bfloat16):
            probs = net(x)
            loss = criterion(probs, y)  # ACL321
        loss.backward()


@torch.autocast("cuda", dtype=torch.bfloat16)
def decorated(x, y):
    return F.binary_cross_entropy(torch.sigmoid(model(x)), y)  # ACL321


def compute(x, y):
    return criterion(torch.sigmoid(model(x)), y)  # ACL321


def every_call_inside(loader):
    for x, y in loader:
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = compute(x, y)
        loss.backward()


# should not flag: the loss on logits, outside autocast, autocast turned off around
# it, a CPU autocast, and autocast turned off
def logits(loader):
    with_logits = nn.BCEWithLogitsLoss()
    for x, y in loader:
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = with_logits(model(x), y)
        loss.backward()


def outside(loader):
    for x, y in loader:
        with torch.autocast("cuda", dtype=torch.bfloat16):
            out = model(x)
        loss = criterion(torch.sigmoid(out.float()), y)
        loss.backward()


def turned_off(loader):
    for x, y in loader:
        with torch.autocast("cuda", dtype=torch.bfloat16):
            out = model(x)
            with torch.autocast("cuda", dtype=torch.bfloat16, enabled=False):
                loss = F.binary_cross_entropy(torch.sigmoid(out.float()), y)
        loss.backward()


def on_cpu(loader):
    for x, y in loader:
        with torch.autocast("cpu", dtype=torch.bfloat16):
            loss = F.binary_cross_entropy(torch.sigmoid(model(x)), y)
        loss.backward()


def disabled(loader):
    for x, y in loader:
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=False):
            loss = criterion(torch.sigmoid(model(x)), y)
        loss.backward()
