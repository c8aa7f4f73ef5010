# Scripting and tracing to export a trained model: saved, frozen for inference,
# drawn in TensorBoard, or done in an export function. None is reported.
import torch
from torch.utils.tensorboard import SummaryWriter


def train(model, loader, optimizer):
    for x in loader:
        model(x).sum().backward()
        optimizer.step()
    scripted = torch.jit.script(model)
    scripted.save("model.pt")
    torch.jit.script(model).save("again.pt")
    traced = torch.jit.trace(model, torch.randn(1, 3))
    torch.jit.save(traced, "traced.pt")
    frozen = torch.jit.freeze(torch.jit.script(model.eval()))
    SummaryWriter().add_graph(torch.jit.trace(model, torch.randn(1, 3)), [])
    return frozen


def export_torchscript(model, example):
    ts = torch.jit.trace(model, example, strict=False)
    return ts
