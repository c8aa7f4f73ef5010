# ACL312: uses of the scaler beyond the codemod leave the finding without a fix.
import torch


class Trainer:
    def __init__(self, model, optimizer):
        self.model = model
        self.optimizer = optimizer
        self.scaler = torch.amp.GradScaler("cuda")

    def step(self, x):
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=True):
            loss = self.model(x).mean()
        self.scaler.scale(loss).backward()
        self.scaler.step(self.optimizer)
        self.scaler.update()
        print("scale", self.scaler.get_scale())


def train_one_epoch(model, optimizer, batches, scaler):
    for x in batches:
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = model(x).mean()
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()


def main(model, optimizer, batches):
    scaler = torch.amp.GradScaler("cuda")
    train_one_epoch(model, optimizer, batches, scaler)
    maybe = torch.amp.GradScaler("cuda") if batches else None
    if maybe is not None:
        maybe.update()
