# ACL403: a Horovod script is guarded with hvd.rank().
import horovod.torch as hvd
import torch

hvd.init()
model = torch.nn.Linear(4, 2)
optimizer = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1))
if hvd.rank() == 0:
    torch.save(model.state_dict(), "guarded.pt")
if hvd.rank() == 0:
    torch.save(model.state_dict(), "model.pt")
