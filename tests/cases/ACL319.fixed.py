# ACL319: the GradScaler updated or unscaled on every micro-batch of an accumulation.
import torch
from torch import nn

model = nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
scaler = torch.amp.GradScaler("cuda", enabled=torch.cuda.is_available())


def update_every_micro_batch(loader, accum):
    for i, (x, y) in enumerate(loader):
        with torch.autocast("cuda", enabled=torch.cuda.is_available()):
            loss = nn.functional.mse_loss(model(x), y) / accum
        scaler.scale(loss).backward()
        if (i + 1) % accum == 0:
            scaler.step(opt)
            scaler.update()
            opt.zero_grad()


def unscale_every_micro_batch(loader, accum, max_norm):
    for i, (x, y) in enumerate(loader):
        with torch.autocast("cuda", enabled=torch.cuda.is_available()):
            loss = nn.functional.mse_loss(model(x), y) / accum
        scaler.scale(loss).backward()
        if (i + 1) % accum == 0:
            scaler.unscale_(opt)
            nn.utils.clip_grad_norm_(model.parameters(), max_norm)
            scaler.step(opt)
            scaler.update()
            opt.zero_grad()


def both(loader, accum):
    for i, (x, y) in enumerate(loader):
        with torch.autocast("cuda", enabled=torch.cuda.is_available()):
            loss = nn.functional.mse_loss(model(x), y) / accum
        scaler.scale(loss).backward()
        if not (i + 1) % accum:
            scaler.unscale_(opt)
            scaler.step(opt)
            scaler.update()
            opt.zero_grad()


def already_in_branch(loader, accum):
    for i, (x, y) in enumerate(loader):
        with torch.autocast("cuda", enabled=torch.cuda.is_available()):
            loss = nn.functional.mse_loss(model(x), y) / accum
        scaler.scale(loss).backward()
        if (i + 1) % accum == 0:
            scaler.step(opt)
            scaler.update()
            opt.zero_grad()


# should not flag: the scaler driven in the step branch, and a loop that steps on
# every iteration
def correct(loader, accum):
    for i, (x, y) in enumerate(loader):
        with torch.autocast("cuda", enabled=torch.cuda.is_available()):
            loss = nn.functional.mse_loss(model(x), y) / accum
        scaler.scale(loss).backward()
        if (i + 1) % accum == 0:
            scaler.unscale_(opt)
            nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            scaler.step(opt)
            scaler.update()
            opt.zero_grad()


def every_iteration(loader):
    for x, y in loader:
        with torch.autocast("cuda", enabled=torch.cuda.is_available()):
            loss = nn.functional.mse_loss(model(x), y)
        scaler.scale(loss).backward()
        scaler.unscale_(opt)
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        scaler.step(opt)
        scaler.update()
        opt.zero_grad()
