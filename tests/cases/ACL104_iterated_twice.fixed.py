# ACL104 without a fix where two iterations of one loader run at once: a persistent
# loader hands out a single iterator. The semi-supervised shape (two strong views of
# the unlabelled data zipped with the labelled batches), a loader read inside a loop
# over itself, and the same through a function the loop calls. The labelled loader,
# iterated once at a time, is fixed.
import torch
from torch.utils.data import DataLoader

from frames import Frames  # reads image files


def semi_supervised(model, optimizer, epochs):
    labelled = DataLoader(
        Frames("data/"), batch_size=8, num_workers=2, persistent_workers=True
    )
    unlabelled = DataLoader(Frames("data/"), batch_size=8, num_workers=2)
    for epoch in range(epochs):
        for (x,), (u1,), (u2,) in zip(labelled, unlabelled, unlabelled):
            loss = model(x).sum() + model(u1).sum() + model(u2).sum()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()


def contrastive(model, optimizer, epochs):
    pairs = DataLoader(Frames("data/"), batch_size=8, num_workers=2)
    for epoch in range(epochs):
        for (anchor,) in pairs:
            for (other,) in pairs:
                loss = (model(anchor) - model(other)).pow(2).mean()
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()


def negatives(model, loader):
    return sum(model(x).sum() for (x,) in loader)


def mined(model, optimizer, epochs):
    loader = DataLoader(Frames("data/"), batch_size=8, num_workers=2)
    for epoch in range(epochs):
        for (x,) in loader:
            loss = model(x).sum() - negatives(model, loader)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
