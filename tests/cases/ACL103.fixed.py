# ACL103: batch tensors copied to the GPU in a loop over a loader that pins memory.
import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset
from tqdm import tqdm

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
dataset = TensorDataset(torch.randn(256, 8), torch.randint(0, 2, (256,)))
loader = DataLoader(dataset, batch_size=32, num_workers=2, pin_memory=True)
model = torch.nn.Linear(8, 2).to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

for epoch in range(2):
    for inputs, labels in loader:
        inputs = inputs.to(device, non_blocking=True)
        labels = labels.cuda(non_blocking=True)
        loss = F.cross_entropy(model(inputs), labels)
        loss.backward()
        optimizer.step()

    for step, (inputs, labels) in enumerate(tqdm(loader)):
        inputs, labels = (
            inputs.to(device, non_blocking=True),
            labels.to(device, non_blocking=True),
        )

    for batch in loader:
        inputs = batch[0].to(device, non_blocking=True)
        labels = batch[1].to(device=device, dtype=torch.long, non_blocking=True)

# Not flagged: already asynchronous.
for inputs, labels in loader:
    inputs = inputs.to(device, non_blocking=True)
    labels = labels.cuda(non_blocking=True)

# Not flagged: the copy is made from a pageable tensor built on the CPU (`.float()`),
# which `non_blocking` cannot overlap.
for inputs, labels in loader:
    inputs = inputs.float()
    inputs = inputs.cuda()

# Not flagged: moves to the CPU, dtype conversions, the model.
for inputs, labels in loader:
    inputs.to("cpu")
    labels = labels.to(torch.float32)
    model.to(device)

# Not flagged: outside the loop.
first = next(iter(loader))[0].cuda()
