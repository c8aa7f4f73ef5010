# Host-device synchronization on every training step, and where it is not.
import time

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
        optimizer.step()  # ACL207
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


def train_one_epoch(loader):
    total = torch.zeros((), device="cuda")
    for x, y in loader:
        loss = F.cross_entropy(model(x.cuda()), y.cuda())
        loss.backward()
        optimizer.step()
        total += loss.detach()
    return total.item()  # once per epoch: its caller's loop runs epochs, not steps


def fit(loader, epochs):
    for epoch in range(epochs):
        mean = train_one_epoch(loader)
        scores = validate_scores(loader).cpu().numpy()
        print(epoch, mean, scores)


def validate_scores(loader):
    with torch.no_grad():
        return torch.stack([model(x.cuda()).mean() for x, _ in loader])


def train_agent(env, policy, steps, train_every):
    # an agent acts on every iteration and trains on every k-th: the action has to
    # reach the environment, and most iterations are not training steps
    obs = env.reset()
    for step in range(steps):
        action = policy(torch.as_tensor(obs).cuda()).argmax().item()
        obs, reward, done, info = env.step(action)
        if step % train_every == 0:
            loss = policy(torch.as_tensor(obs).cuda()).sum()
            loss.backward()
            optimizer.step()


def train_host_arrays(loader):
    for x, y in loader:
        loss = F.cross_entropy(model(x.cuda()), y.cuda())
        loss.backward()
        optimizer.step()
        weights = y.float().numpy()  # `.numpy()` raises on a device tensor: host data
        print(weights.sum())


def time_synchronized():
    torch.cuda.synchronize()
    return time.perf_counter()


def benchmark_step(loader):
    # waits on purpose: the sync makes the timings mean something
    for x, y in loader:
        start = time_synchronized()
        F.cross_entropy(model(x.cuda()), y.cuda()).backward()
        print(time_synchronized() - start)
