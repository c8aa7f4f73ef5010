# ACL102: a device written as an f-string (`f"cuda:{local_rank}"`) is a CUDA device;
# the script picks it without a test, so the fix pins unconditionally.
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler


class TokenWindows(Dataset):
    def __init__(self, path, block_size):
        self.tokens = torch.load(path)  # ACL412
        self.block_size = block_size

    def __len__(self):
        return (len(self.tokens) - 1) // self.block_size

    def __getitem__(self, i):
        chunk = self.tokens[i * self.block_size : (i + 1) * self.block_size + 1]
        return chunk[:-1], chunk[1:]


def main():
    dist.init_process_group("nccl")
    local_rank = int(os.environ["LOCAL_RANK"])
    device = f"cuda:{local_rank}"
    torch.cuda.set_device(device)
    dataset = TokenWindows("data/train.pt", 256)
    sampler = DistributedSampler(dataset)
    loader = DataLoader(dataset, batch_size=16, sampler=sampler, num_workers=4)  # ACL102 ACL104
    model = DDP(nn.Embedding(50257, 64).to(device), device_ids=[local_rank])
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4)  # ACL309
    for epoch in range(2):
        sampler.set_epoch(epoch)
        for x, y in loader:
            x, y = x.to(device), y.to(device)
            loss = model(x).float().logsumexp(-1).mean() - model(y).float().mean()
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()  # ACL207
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
