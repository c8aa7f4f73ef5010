# ACL301: optimizers and modules built where this file cannot see are still torch's.
import timm
import torch
from mylib import registry
from timm.optim import create_optimizer_v2
from utils.torch_utils import smart_optimizer


def train_one_epoch(model: torch.nn.Module, optimizer, loss_scaler, batch):
    # a parameter stepped through a helper, `loss_scaler(loss, optimizer)` (MAE, DeiT, Swin)
    loss = model(batch).sum()
    loss_scaler(loss, optimizer, parameters=model.parameters())
    optimizer.zero_grad(set_to_none=True)


model = torch.nn.Linear(4, 2)
# built by the project's own factory: an absolute import that looks like a library
optimizer = smart_optimizer(model, "SGD", 0.01, 0.9, 1e-5)
optimizer.zero_grad(set_to_none=True)

adamw = create_optimizer_v2(model, "adamw", lr=1e-3)
adamw.zero_grad(set_to_none=True)

net = timm.create_model("resnet18")
net.zero_grad(set_to_none=True)

# an object another module made: what it iterates is still tensors with `.grad`
registry.zero_grad(set_to_none=True)
