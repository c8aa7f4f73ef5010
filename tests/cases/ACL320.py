# ACL320: the gradients clipped on every micro-batch of an accumulation.
import torch
from torch import nn
from torch.nn.utils import clip_grad_value_

model = nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
scaler = torch.amp.GradScaler("cuda", enabled=torch.cuda.is_available())


def modulo(loader, accum, max_norm):
    for i, (x, y) in enumerate(loader):
        loss = nn.functional.mse_loss(model(x), y) / accum
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), max_norm)  # ACL320
        if (i + 1) % accum == 0:
            opt.step()
            opt.zero_grad()


def with_scaler(loader, accum, max_norm):
    for i, (x, y) in enumerate(loader):
        with torch.autocast("cuda", enabled=torch.cuda.is_available()):
            loss = nn.functional.mse_loss(model(x), y) / accum
        scaler.scale(loss).backward()
        if (i + 1) % accum == 0:
            scaler.unscale_(opt)
            scaler.step(opt)
            scaler.update()
            opt.zero_grad()
        grad_norm = clip_grad_value_(model.parameters(), 0.5)  # ACL320


def norm_logged(loader, accum, log):
    for i, (x, y) in enumerate(loader):
        loss = nn.functional.mse_loss(model(x), y) / accum
        loss.backward()
        norm = nn.utils.clip_grad_norm_(model.parameters(), 1.0)  # ACL320
        log(norm)
        if (i + 1) % accum == 0:
            opt.step()
            opt.zero_grad()


def micro_batches(batches, iters, accum):
    for it in range(iters):
        for micro in range(accum):
            x, y = next(batches)
            (nn.functional.mse_loss(model(x), y) / accum).backward()
            nn.utils.clip_grad_norm_(model.parameters(), 1.0)  # ACL320
        opt.step()
        opt.zero_grad()


def switched(loader, accum, clip):
    # a switch the loop cannot change still runs on every micro-batch when on; the
    # branch that steps on every iteration is left alone (reported, not fixed: the
    # clip has a condition of its own)
    for i, (x, y) in enumerate(loader):
        with torch.autocast("cuda", enabled=torch.cuda.is_available()):
            loss = nn.functional.mse_loss(model(x), y)
        if accum > 1:
            scaler.scale(loss / accum).backward()
            if clip:
                scaler.unscale_(opt)  # ACL319
                nn.utils.clip_grad_norm_(model.parameters(), clip)  # ACL320
            if (i + 1) % accum == 0:
                scaler.step(opt)
                scaler.update()
                opt.zero_grad()
        else:
            opt.zero_grad()
            scaler.scale(loss).backward()
            if clip:
                scaler.unscale_(opt)
                nn.utils.clip_grad_norm_(model.parameters(), clip)
            scaler.step(opt)
            scaler.update()


# should not flag: one clip in the step branch, a loop that steps on every iteration
def correct(loader, accum):
    for i, (x, y) in enumerate(loader):
        loss = nn.functional.mse_loss(model(x), y) / accum
        loss.backward()
        if (i + 1) % accum == 0:
            nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            opt.zero_grad()


def every_iteration(loader):
    for x, y in loader:
        nn.functional.mse_loss(model(x), y).backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad()
