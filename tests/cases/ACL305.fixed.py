# ACL305: clipping between the scaled backward and the scaler's step.
import torch
from torch import nn

model = nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
scaler = torch.amp.GradScaler("cuda", enabled=torch.cuda.is_available())


def accumulate(batches, accum, max_norm):
    for i, (x, y) in enumerate(batches):
        with torch.autocast("cuda", enabled=torch.cuda.is_available()):
            loss = nn.functional.mse_loss(model(x), y) / accum
        scaler.scale(loss).backward()
        if (i + 1) % accum == 0:
            # clip the accumulated gradients
            scaler.unscale_(opt)
            grad_norm = nn.utils.clip_grad_norm_(model.parameters(), max_norm)
            scaler.step(opt)
            scaler.update()
            opt.zero_grad(set_to_none=True)


class Trainer:
    def __init__(self, model, optimizer):
        self.model = model
        self.optimizer = optimizer
        self.scaler = torch.amp.GradScaler("cuda")

    def step(self, loss):
        self.optimizer.zero_grad()
        self.scaler.scale(loss).backward()
        self.scaler.unscale_(self.optimizer)
        torch.nn.utils.clip_grad_value_(self.model.parameters(), 0.5)
        self.scaler.step(self.optimizer)
        self.scaler.update()


def received(model, optimizer, loss, loss_scaler):
    # a scaler received as a parameter, driven through GradScaler's protocol
    loss_scaler.scale(loss).backward()
    loss_scaler.unscale_(optimizer)
    nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    loss_scaler.step(optimizer)
    loss_scaler.update()


def maybe_scaled(model, optimizer, loss, scaler=None):
    if scaler is not None:
        scaler.scale(loss).backward()
    else:
        loss.backward()
    nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    if scaler is not None:
        scaler.step(optimizer)
        scaler.update()
    else:
        optimizer.step()


# should not flag: unscaled first, a clip on the path without the scaler, clipping
# after the step, and an object that is not a GradScaler
def correct(loss, max_norm):
    scaler.scale(loss).backward()
    scaler.unscale_(opt)
    nn.utils.clip_grad_norm_(model.parameters(), max_norm)
    scaler.step(opt)
    scaler.update()


def either(loss, use_amp):
    if use_amp:
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
    else:
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()


class Scaler:
    def scale(self, loss):
        return loss

    def step(self, optimizer):
        optimizer.step()


def homemade(loss):
    mine = Scaler()
    mine.scale(loss).backward()
    nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    mine.step(opt)
