# ACL103: batches handed to the file's functions, dictionaries of tensors, and
# loaders whose collate_fn builds its own objects (reported without a fix).
import torch
from torch.utils.data import DataLoader

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


def train_step(model, batch):
    images, labels = batch
    images = images.to(device)  # ACL103
    return model(images), labels.to(device)  # ACL103


def to_device(batch):
    return {key: value.to(device) for key, value in batch.items()}  # ACL103


def move(x):
    # Not flagged: also handed a tensor that no loader produced.
    return x.to(device)


def train(model, loader):
    for batch in loader:
        train_step(model, batch)
        move(batch[0])
    move(torch.ones(3))


def main(model, dataset, dict_dataset, collate):
    loader = DataLoader(dataset, batch_size=16, num_workers=2, pin_memory=True)
    train(model, loader)
    dict_loader = DataLoader(dict_dataset, batch_size=16, num_workers=2, pin_memory=True)
    for batch in dict_loader:
        inputs = to_device(batch)
    custom = DataLoader(
        dataset, batch_size=16, num_workers=2, pin_memory=True, collate_fn=collate
    )
    for samples, targets in custom:
        samples = samples.to(device)  # ACL103


# Not flagged: a loader from another module, whose pinning this file does not show.
def elsewhere(model, make_loader):
    for x, y in make_loader():
        x = x.to(device)
