# ACL315: `empty_cache()` in a helper that the training loop calls on every step (a
# method of the trainer): every step runs it.
import torch
import torch.nn as nn


class Trainer:
    def __init__(self, model, optimizer):
        self.model = model
        self.optimizer = optimizer

    def release(self):
        torch.cuda.empty_cache()  # ACL315

    def step(self, x, y):
        loss = nn.functional.cross_entropy(self.model(x), y)
        self.optimizer.zero_grad()
        loss.backward()
        self.optimizer.step()
        self.release()

    def fit(self, loader, epochs):
        torch.set_float32_matmul_precision("high")
        for epoch in range(epochs):
            for x, y in loader:
                self.step(x.cuda(non_blocking=True), y.cuda(non_blocking=True))
            torch.cuda.empty_cache()
