# ACL301: a zeroing loop in the `else` of a branch that sets `p.grad = None` is a
# deliberate choice between the two (as torch's own `Optimizer.zero_grad` does): not
# reported. The same loop with no such branch beside it is.
import torch
import torch.nn as nn


class Trainer:
    def __init__(self, model, lr, keep_grad_tensors=False):
        self.model = model
        self.optimizer = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9)
        self.keep_grad_tensors = keep_grad_tensors

    def clear_grads(self):
        if not self.keep_grad_tensors:
            for p in self.model.parameters():
                p.grad = None
        else:
            # grad tensors are kept for the gradient-noise probe, which reads them
            for p in self.model.parameters():
                if p.grad is not None:
                    p.grad.detach_()
                    p.grad.zero_()

    def clear_head(self, head, free):
        if free:
            for name, p in head.named_parameters():
                p.grad = None
        elif head.training:
            for name, p in head.named_parameters():
                if p.grad is not None:
                    p.grad.zero_()

    def step(self, x, y):
        self.clear_grads()
        loss = nn.functional.cross_entropy(self.model(x), y)
        loss.backward()
        self.optimizer.step()
        return loss.item()


def plain_epoch(model, optimizer, batches):
    for x, y in batches:
        model.zero_grad(set_to_none=True)
        nn.functional.mse_loss(model(x), y).backward()
        optimizer.step()
