# ACL302: a file that adds into `.grad` by hand needs its gradients to be tensors:
# `set_to_none=False` is deliberate there.
import torch

model = torch.nn.Linear(4, 2)
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)


def apply_remote(grads):
    for p, g in zip(model.parameters(), grads):
        p.grad.data.add_(g)
    optimizer.step()
    optimizer.zero_grad(set_to_none=False)
