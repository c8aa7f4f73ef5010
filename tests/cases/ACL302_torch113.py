# target-torch: 1.13
# ACL302: before torch 2.0 a plain zero_grad() zero-filled the gradients.
import torch


class Meter:
    def zero_grad(self):
        self.total = 0


model = torch.nn.Linear(4, 2)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
meter = Meter()

optimizer.zero_grad()  # ACL302
model.zero_grad()  # ACL302
optimizer.zero_grad(set_to_none=False)  # ACL302
optimizer.zero_grad(set_to_none=True)
meter.zero_grad()


def step(net, opt, x):
    opt.zero_grad()  # ACL302
    net.zero_grad(  # ACL302
    )
    net(x).sum().backward()
    opt.step()


class Wrapped(torch.nn.Module):
    def zero_grad(self, set_to_none=True):
        # this file's own zero_grad: a plain call gets its default, not torch's
        for p in self.parameters():
            p.grad = None


wrapped = Wrapped()
wrapped.zero_grad()
wrapped.zero_grad(set_to_none=False)  # ACL302
