# An inference script that switches autograd off for the whole process.
import torch

torch.set_grad_enabled(False)
model = torch.nn.Linear(8, 2)


def predict(model, test_loader):
    model.eval()
    return [model(x) for x in test_loader]


def evaluate(model, val_loader):
    model.eval()
    for x, y in val_loader:
        model(x)
