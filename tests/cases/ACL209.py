# Linear and Embedding sizes that are not multiples of 8, in a file that trains
# under CUDA autocast: one finding per constructor, sizes below 8 left alone.
import torch
import torch.nn as nn

VOCAB = 50257
HIDDEN = 768


class GPTHead(nn.Module):
    def __init__(self):
        super().__init__()
        self.wte = nn.Embedding(VOCAB, HIDDEN)  # ACL209
        self.proj = nn.Linear(HIDDEN, 3 * 257)  # ACL209
        self.both = nn.Linear(in_features=100, out_features=1002)  # ACL209
        self.classifier = nn.Linear(HIDDEN, 1)
        self.pairs = nn.Embedding(2, HIDDEN)
        self.aligned = nn.Linear(16 * 7 * 7, 4 * HIDDEN)

    def forward(self, idx):
        return self.classifier(self.proj(self.wte(idx)))


def train(loader, dim):
    model = GPTHead().cuda()
    extra = nn.Linear(dim, dim)  # not literal: not reported
    opt = torch.optim.AdamW([*model.parameters(), *extra.parameters()])  # ACL309
    for idx in loader:
        with torch.autocast(device_type="cuda", dtype=torch.bfloat16):
            loss = model(idx.cuda()).mean()
        loss.backward()
        opt.step()
