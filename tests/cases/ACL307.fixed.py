# Running totals of the loss: the ones that keep each step's graph, and the ones that do not.
import torch
import torch.nn.functional as F

model = torch.nn.Linear(8, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
scaler = torch.amp.GradScaler("cuda", enabled=False)


def train(loader):
    total = 0.0
    total_loss = 0.0
    running = 0.0
    losses = []
    for x, y in loader:
        optimizer.zero_grad()
        loss = F.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
        total += loss.detach()
        total_loss = total_loss + loss.detach()
        running += loss.detach() * x.size(0)
        losses.append(loss.detach())
    return total / len(loader), total_loss, running, losses


def train_step(x, y):
    optimizer.zero_grad()
    loss = F.mse_loss(model(x), y)
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
    return loss


def train_with_steps(loader):
    epoch_loss = 0
    for x, y in loader:
        loss = train_step(x, y)
        epoch_loss += loss.detach()
    print(f"mean loss {epoch_loss.item() / len(loader):.4f}")


class Trainer:
    def __init__(self):
        self.epoch_losses = []
        self.seen = 0.0

    def fit(self, loader):
        for x, y in loader:
            optimizer.zero_grad()
            loss = F.mse_loss(model(x), y)
            loss.backward()
            optimizer.step()
            self.epoch_losses.append(loss.detach())


# -- not reported --------------------------------------------------------------------


def train_detached(loader):
    a, b, c, d = 0.0, 0.0, 0.0, []
    for x, y in loader:
        optimizer.zero_grad()
        loss = F.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
        a += loss.item()
        b += loss.detach()
        c += float(loss)
        d.append(loss.data)
    return a, b, c, d


def train_total_under_no_grad(loader):
    total = torch.zeros(())
    for x, y in loader:
        optimizer.zero_grad()
        loss = F.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
        with torch.no_grad():
            total += loss
    return total


def train_rebound(loader):
    total = 0.0
    for x, y in loader:
        loss = F.mse_loss(model(x), y)
        loss.backward()
        loss = loss.item()
        total += loss
    return total


def train_backpropagated_total(loader):
    # the total is itself backpropagated: it is the loss, not a log of it
    for x, y in loader:
        total = 0.0
        for chunk_x, chunk_y in zip(x.split(2), y.split(2)):
            loss = F.mse_loss(model(chunk_x), chunk_y)
            loss.backward(retain_graph=True)
            total += loss
        (total / 4).backward()
        optimizer.step()


def train_components(loader):
    # components added into the loss that is backpropagated
    for x, y in loader:
        loss = 0.0
        mse = F.mse_loss(model(x), y)
        loss += mse
        loss.backward()


def totals_without_backward(loader):
    # no backward pass in this loop: `val_loss` is not a training loss
    total = 0.0
    for x, y in loader:
        val_loss = F.mse_loss(model(x), y)
        total += val_loss
    return total


def log(meter, loader):
    # `meter` is not a list the file builds
    for x, y in loader:
        loss = F.mse_loss(model(x), y)
        loss.backward()
        meter.append(loss)
