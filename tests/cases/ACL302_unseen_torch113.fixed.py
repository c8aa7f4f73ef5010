# target-torch: 1.13
# ACL302: a plain zero_grad() passes no set_to_none, so on an object built where this
# file cannot see, it is torch's only when the file uses the object as torch's:
# called, stepped, moved, its parameters read, or handed to torch.
import torch
from guided_diffusion.fp16_util import MixedPrecisionTrainer
from models import Net
from utils.torch_utils import smart_optimizer

model = Net().to("cpu")
optimizer = smart_optimizer(model, "SGD", 0.01, 0.9, 1e-5)
scaler = torch.cuda.amp.GradScaler()
trainer = MixedPrecisionTrainer(model=model)
scheduled = smart_optimizer(model, "Adam", 0.001, 0.9, 0.0)
scheduler = torch.optim.lr_scheduler.StepLR(scheduled, step_size=10)
batches = [torch.randn(2, 4)]

for x in batches:
    model.zero_grad(set_to_none=True)
    optimizer.zero_grad(set_to_none=True)
    scheduled.zero_grad(set_to_none=True)
    trainer.zero_grad()  # a trainer of the project: its zero_grad may be its own
    loss = model(x).sum()
    trainer.backward(loss)
    scaler.step(optimizer)
    trainer.optimize(optimizer)
    scheduler.step()


class Loop:
    def __init__(self, net, opt):
        self.net = net
        self.opt = opt

    def run(self, x):
        self.opt.zero_grad(set_to_none=True)
        self.net.zero_grad()
        self.net.backward(x)
        self.opt.step()


def helper(thing):
    thing.zero_grad()  # used as nothing torch's in this file
