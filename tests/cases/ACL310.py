# Gradient accumulation: losses that are divided by the number of micro-batches, and not.
import torch
import torch.nn as nn
import torch.nn.functional as F

model = nn.Linear(8, 2)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
scaler = torch.amp.GradScaler("cuda", enabled=False)
criterion = nn.CrossEntropyLoss()
summed = nn.CrossEntropyLoss(reduction="sum")
accum_steps = 4


def train(loader):
    for i, (x, y) in enumerate(loader):
        loss = criterion(model(x), y)
        loss.backward()  # ACL310
        if (i + 1) % accum_steps == 0:
            optimizer.step()
            optimizer.zero_grad()


def train_amp(loader, args):
    for step, (x, y) in enumerate(loader):
        with torch.autocast("cuda", enabled=False):
            loss = F.cross_entropy(model(x), y)
        scaler.scale(loss).backward()  # ACL310
        if step % args.accumulation_steps == 0:
            scaler.step(optimizer)
            scaler.update()
            optimizer.zero_grad()


def train_micro_batches(batches, k):
    for x, y in batches:
        xs, ys = x.chunk(k), y.chunk(k)
        for micro in range(k):
            criterion(model(xs[micro]), ys[micro]).backward()  # ACL310
        optimizer.step()
        optimizer.zero_grad()


def micro_step(x, y):
    loss = criterion(model(x), y)
    loss.backward()  # ACL310


def train_through_a_function(loader):
    for i, (x, y) in enumerate(loader):
        micro_step(x, y)
        if (i + 1) % accum_steps == 0:
            optimizer.step()
            optimizer.zero_grad()


# -- not reported --------------------------------------------------------------------


def train_divided(loader, args):
    for i, (x, y) in enumerate(loader):
        loss = criterion(model(x), y)
        loss = loss / args.accum
        loss.backward()
        if (i + 1) % args.accum == 0:
            optimizer.step()
            optimizer.zero_grad()


def train_divided_in_place(loader):
    for i, (x, y) in enumerate(loader):
        loss = criterion(model(x), y)
        loss /= accum_steps
        scaler.scale(loss).backward()
        if (i + 1) % accum_steps == 0:
            scaler.step(optimizer)
            scaler.update()


def train_divided_at_backward(loader):
    for i, (x, y) in enumerate(loader):
        (criterion(model(x), y) / accum_steps).backward()
        if (i + 1) % accum_steps == 0:
            optimizer.step()


def train_summed(loader, tokens_per_step):
    # a sum over every sample of the accumulated batch: nothing to divide by k
    for i, (x, y) in enumerate(loader):
        loss = summed(model(x), y)
        loss.backward()
        if (i + 1) % accum_steps == 0:
            optimizer.step()


def train_accelerate(loader, accelerator):
    # accelerate's backward() divides by its own accumulation count
    for i, (x, y) in enumerate(loader):
        loss = criterion(model(x), y)
        accelerator.backward(loss)
        if (i + 1) % accum_steps == 0:
            optimizer.step()


def train_loss_fn(loader, compute_loss):
    # the loss function is told the accumulation count
    for i, (x, y) in enumerate(loader):
        loss = compute_loss(model(x), y, accum_steps)
        loss.backward()
        if (i + 1) % accum_steps == 0:
            optimizer.step()


def train_every_step(loader, scheduler):
    # the optimizer steps every time; the scheduler every 100 steps
    for i, (x, y) in enumerate(loader):
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
        if i % 100 == 0:
            scheduler.step()


def train_gan(loader, netD, netG, optD, optG, n_critic):
    # two losses, two optimizers: not accumulation
    for i, (x, _) in enumerate(loader):
        lossD = netD(x).mean() - netD(netG(x)).mean()
        lossD.backward()
        optD.step()
        if i % n_critic == 0:
            lossG = -netD(netG(x)).mean()
            lossG.backward()
            optG.step()


def train_scaled_by_method(loader, loss_scaling, batch_total):
    # `.mul(...)` scales like `*`: batch_total counts every micro-batch's samples
    for i, (x, y) in enumerate(loader):
        loss = criterion(model(x), y)
        loss.sum().mul(loss_scaling / batch_total).backward()
        if (i + 1) % accum_steps == 0:
            optimizer.step()


def train_criterion_knows(loader, batch, make_loss):
    # the criterion is built with the accumulation count: it may divide by it
    loss_fn = make_loss(batch=batch // accum_steps)
    for i, (x, y) in enumerate(loader):
        loss = loss_fn(model(x), y)
        loss.backward()
        if (i + 1) % accum_steps == 0:
            optimizer.step()
