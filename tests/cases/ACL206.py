# torch.compile where it runs again and again: in the epoch loop, in a training
# loop, compiled and called at once in an inference loop, in `forward`, and in a
# step function the training loop calls every step.
import torch
from torch import nn


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.mlp = nn.Linear(64, 64)

    def forward(self, x):
        mlp = torch.compile(self.mlp)  # ACL206
        return mlp(x)


def train_step(model, batch, optimizer):
    step_model = torch.compile(model)  # ACL206
    loss = step_model(batch).mean()
    loss.backward()
    optimizer.step()


def train(model, loader, optimizer, epochs, compile_model):
    for epoch in range(epochs):
        if compile_model:
            model = torch.compile(model)  # ACL206
        for batch in loader:
            train_step(model, batch, optimizer)
    for batch in loader:
        fast = torch.compile(model, mode="reduce-overhead")  # ACL206
        fast(batch).sum().backward()


def predict(model, batches):
    return [torch.compile(model)(b) for b in batches] + [  # ACL206
        torch.compile(model)(b) for b in batches  # ACL206
    ]


def serve(model, requests):
    for request in requests:
        yield torch.compile(model)(request)  # ACL206
