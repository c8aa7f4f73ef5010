# Host-device synchronization on every training step, and where it is not.
import numpy as np
import torch
import torch.nn.functional as F

model = torch.nn.Linear(8, 2).cuda()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)


def train(loader, log):
    history = []
    for step, (x, y) in enumerate(loader):
        x, y = x.cuda(), y.cuda()
        optimizer.zero_grad()
        logits = model(x)
        loss = F.cross_entropy(logits, y)
        loss.backward()
        optimizer.step()
        history.append(loss.item())  # ACL308
        preds = logits.argmax(1).cpu().numpy()  # ACL308
        log(preds.tolist())
        print(f"step {step}: {loss:.4f}")  # ACL308
        torch.cuda.synchronize()  # ACL308
        if torch.cuda.is_available():
            torch.cuda.synchronize()  # ACL308
        if step % 100 == 0:
            print(loss.item())
    return history


def record(loss, stats):
    stats.append(loss.detach().tolist())  # ACL308


def train_through_a_function(loader, stats):
    for x, y in loader:
        loss = F.cross_entropy(model(x.cuda()), y.cuda())
        loss.backward()
        optimizer.step()
        record(loss, stats)


# -- not reported --------------------------------------------------------------------


def train_quiet(loader):
    for step, (x, y) in enumerate(loader):
        labels = y.numpy()  # the batch as the loader gives it: on the host
        loss = F.cross_entropy(model(x.cuda()), y.cuda())
        loss.backward()
        optimizer.step()
        scores = np.array([1.0, 2.0])
        print(scores.mean().item(), labels.shape)


def validate(loader):
    with torch.no_grad():
        for x, y in loader:
            print(model(x.cuda()).argmax(1).cpu())


def train_epochs(loader, epochs):
    for epoch in range(epochs):
        total = torch.zeros((), device="cuda")
        for x, y in loader:
            loss = F.cross_entropy(model(x.cuda()), y.cuda())
            loss.backward()
            optimizer.step()
            total += loss.detach()
        print(epoch, total.item())
