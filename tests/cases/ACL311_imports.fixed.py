# The decorator is spelled the way the file imports torch, and imported when missing.
import torch.nn as nn
from torch import no_grad as ng


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 2)

    def forward(self, x):
        return self.fc(x)

    @ng()
    def evaluate(self, loader):
        self.eval()
        hits = 0
        for x, y in loader:
            hits += int((self(x).argmax(1) == y).sum())
        return hits

    @staticmethod
    @ng()
    def validate(model, val_loader):
        model.eval()
        for x, y in val_loader:
            model(x)


@ng()
def validate_quietly(model, val_loader):
    model.eval()
    for x, y in val_loader:
        model(x)
