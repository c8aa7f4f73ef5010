# ACL404: a helper builds the loader (with a DistributedSampler only when distributed)
# and returns it inside a tuple; the training function unpacks it and iterates it each
# epoch. The sampler's own name is out of reach there, so the fix goes through
# `train_loader.sampler`, which is a DistributedSampler only on distributed runs.
import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler


class MelDataset(Dataset):
    def __init__(self, files):
        self.files = files

    def __len__(self):
        return len(self.files)

    def __getitem__(self, index):
        return torch.load(self.files[index])  # ACL412


def collate(batch):
    return torch.nn.utils.rnn.pad_sequence(batch, batch_first=True)


def prepare_dataloaders(hparams):
    trainset = MelDataset(hparams.training_files)
    valset = MelDataset(hparams.validation_files)
    if hparams.distributed_run:
        train_sampler = DistributedSampler(trainset)  # ACL404
        shuffle = False
    else:
        train_sampler = None
        shuffle = True
    train_loader = DataLoader(  # ACL104
        trainset,
        num_workers=1,
        shuffle=shuffle,
        sampler=train_sampler,
        batch_size=hparams.batch_size,
        pin_memory=False,
        drop_last=True,
        collate_fn=collate,
    )
    return train_loader, valset, collate


def train(model, optimizer, hparams):
    if hparams.distributed_run:
        dist.init_process_group("nccl")
    train_loader, valset, collate_fn = prepare_dataloaders(hparams)
    iteration = 0
    for epoch in range(hparams.epochs):
        print("Epoch: {}".format(epoch))
        for i, batch in enumerate(train_loader):
            model.zero_grad()
            loss = model(batch).mean()
            loss.backward()
            optimizer.step()
            iteration += 1
    return valset, collate_fn
