# target-torch: 1.13
# ACL302: before torch 2.0 a plain zero_grad() zero-fills, but only torch's zero_grad
# takes set_to_none: apex, horovod, DeepSpeed and fairseq objects define their own.
import deepspeed
import horovod.torch as hvd
import torch
from apex.optimizers import FP16_Optimizer, FusedAdam
from fairseq.optim import build_optimizer
from utils.torch_utils import smart_optimizer

model = torch.nn.Linear(4, 2)
fused = FusedAdam(model.parameters())
fused.zero_grad()
wrapped = FP16_Optimizer(fused)
wrapped.zero_grad()
distributed = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1))
distributed.zero_grad()
engine, ds_optimizer, _, _ = deepspeed.initialize(model=model)
engine.zero_grad()


def rebuild(cfg, params):
    fairseq_optimizer = build_optimizer(cfg, params)
    fairseq_optimizer.zero_grad()


# a factory of the project, stepped: torch's
optimizer = smart_optimizer(model, "SGD", 0.01, 0.9, 1e-5)
optimizer.zero_grad(set_to_none=True)
optimizer.step()
