# ACL316: foreach=False on torch.optim optimizers in a CUDA training file.
import torch
from torch import optim

NO_FOREACH = False
model = torch.nn.Linear(8, 2).to("cuda")
a = optim.Adam(model.parameters(), lr=1e-3)
b = optim.RMSprop(
    model.parameters(),
    lr=1e-3,
)


class MyAdagrad(optim.Adagrad):
    pass


c = MyAdagrad(model.parameters(), lr=0.1)

# should not flag: foreach left to torch, or on; another library's optimizer
d = optim.Adam(model.parameters(), foreach=True)
e = optim.SGD(model.parameters(), lr=0.1, foreach=None)
from lion_pytorch import Lion

f = Lion(model.parameters(), foreach=False)
