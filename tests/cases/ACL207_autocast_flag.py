# An autocast switched by a flag counts as autocast: the file does not train in
# float32 alone, so it is not reported.
import torch
import torch.nn as nn


def train(loader, use_amp):
    model = nn.Linear(512, 512).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for x in loader:
        with torch.autocast("cuda", enabled=use_amp):  # ACL314
            loss = model(x.cuda()).pow(2).mean()
        loss.backward()
        opt.step()
