# ACL302: a file that adds into rows of `.grad` in place (sparse updates gathered by
# hand) needs the gradient tensors to exist: keeping them is deliberate.
import torch
import torch.nn as nn

embedding = nn.Embedding(10000, 128)
optimizer = torch.optim.SGD(embedding.parameters(), lr=0.1)


def apply_row_grads(rows, grads):
    weight = embedding.weight
    if weight.grad is None:
        weight.grad = torch.zeros_like(weight)
    weight.grad[rows] += grads
    optimizer.step()
    optimizer.zero_grad(set_to_none=False)

