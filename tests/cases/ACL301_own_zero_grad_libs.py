# ACL301: objects whose zero_grad is another library's own and takes no set_to_none
# (apex's fused optimizers, horovod, DeepSpeed, fairseq): the fix would raise TypeError.
import deepspeed
import horovod.torch as hvd
import torch
from apex.optimizers import FusedAdam
from fairseq import optim

model = torch.nn.Linear(4, 2)

fused = FusedAdam(model.parameters(), lr=1e-3)
for group in fused.param_groups:
    for p in group["params"]:
        p.grad.zero_()

distributed = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1))
for group in distributed.param_groups:
    for p in group["params"]:
        p.grad.zero_()

engine = deepspeed.DeepSpeedEngine(model=model)
for p in engine.parameters():
    p.grad.zero_()


def rebuild(cfg, params):
    fairseq_optimizer = optim.build_optimizer(cfg, params)
    for group in fairseq_optimizer.param_groups:
        for p in group["params"]:
            p.grad.zero_()


class Fused(FusedAdam):
    pass


subclassed = Fused(model.parameters())
for group in subclassed.param_groups:
    for p in group["params"]:
        p.grad.zero_()
