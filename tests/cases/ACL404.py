# ACL404: shuffling DistributedSamplers iterated every epoch without set_epoch().
import torch
import torch.utils.data as tud
from mylib.samplers import DistributedSampler as OtherSampler
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data import DistributedSampler as DS
from torch.utils.data.distributed import DistributedSampler
from tqdm import tqdm, trange

model = torch.nn.Linear(4, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
dataset = TensorDataset(torch.randn(64, 4), torch.randn(64, 1))
NO_SHUFFLE = False


def step(x, y):
    optimizer.zero_grad()
    torch.nn.functional.mse_loss(model(x), y).backward()
    optimizer.step()


# should flag
sampler = DistributedSampler(dataset)  # ACL404
loader = DataLoader(dataset, batch_size=8, sampler=sampler, num_workers=2)  # ACL104 ACL106
for epoch in range(3):
    for x, y in loader:
        step(x, y)

inline = DataLoader(dataset, batch_size=8, sampler=DS(dataset, shuffle=True), num_workers=2)  # ACL104 ACL404 ACL106
for epoch in trange(3):
    for i, (x, y) in enumerate(tqdm(inline)):
        step(x, y)

full = tud.DataLoader(  # ACL104 ACL106
    dataset,
    batch_size=8,
    sampler=tud.distributed.DistributedSampler(dataset, seed=1),  # ACL404
    num_workers=2,
)
for epoch in range(3):
    for x, y in full:
        step(x, y)

anonymous = DistributedSampler(dataset)  # ACL404
anonymous_loader = DataLoader(dataset, sampler=anonymous, num_workers=2)  # ACL104 ACL106
for _ in range(3):
    for x, y in anonymous_loader:
        step(x, y)

for epoch in range(3):
    fresh = DistributedSampler(dataset)  # ACL404
    for x, y in DataLoader(dataset, sampler=fresh, num_workers=2):  # ACL106
        step(x, y)

# should not flag
ordered = DistributedSampler(dataset, shuffle=False)
positional = DistributedSampler(dataset, None, None, False)
constant = DistributedSampler(dataset, shuffle=NO_SHUFFLE)
kwargs = {"shuffle": False, "seed": 3}
splatted = DistributedSampler(dataset, **kwargs)
unknown = DistributedSampler(dataset, shuffle=bool(len(dataset) % 2))
other = OtherSampler(dataset)
for s in (ordered, positional, constant, splatted, unknown, other):
    pass
for epoch in range(3):
    for sampler_ in (ordered, positional, constant, splatted, unknown, other):
        for x, y in DataLoader(dataset, sampler=sampler_, num_workers=2):  # ACL106
            step(x, y)
once = DataLoader(dataset, sampler=DistributedSampler(dataset), num_workers=2)  # ACL106
for x, y in once:  # a single pass: no epochs to repeat
    step(x, y)
repeated_eval = DataLoader(dataset, sampler=DistributedSampler(dataset, shuffle=False), num_workers=2)  # ACL104 ACL106
for epoch in range(3):
    with torch.no_grad():
        for x, y in repeated_eval:
            model(x)

# should not flag: an evaluation loader reads the same order every epoch, which does
# not change its result
evaluation = DataLoader(dataset, sampler=DistributedSampler(dataset), num_workers=2)  # ACL104 ACL106
for epoch in range(3):
    with torch.no_grad():
        for x, y in evaluation:
            model(x)
