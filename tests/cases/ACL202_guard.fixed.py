# Training in the `__main__` block itself, and `torch` imported only as `torch.nn`:
# the setting opens the block, and `import torch` is added.
import torch
import torch.nn as nn
import torch.optim as optim

from mylib.data import batches

if __name__ == "__main__":
    torch.backends.cudnn.benchmark = True
    # build the model
    net = nn.Conv1d(4, 4, 3).to("cuda")
    opt = optim.SGD(net.parameters(), lr=0.01)
    for x in batches():
        net(x.to("cuda")).sum().backward()
        opt.step()
