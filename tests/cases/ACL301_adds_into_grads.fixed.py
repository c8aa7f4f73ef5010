# ACL301: a file that adds into `.grad` by hand needs its gradients to be tensors
# (pytorch/examples' batch-RPC parameter server): its zero-filling is deliberate.
import torch


class ParameterServer:
    def __init__(self, model):
        self.model = model
        self.optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
        for p in self.model.parameters():
            p.grad = torch.zeros_like(p)

    def update(self, grads):
        for p, g in zip(self.model.parameters(), grads):
            p.grad += g
        self.optimizer.step()
        for p in self.model.parameters():
            p.grad.zero_()
