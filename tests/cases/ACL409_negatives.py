# ACL409 negatives: a GAN's two backward passes per step (not accumulation), a step on
# every micro-batch, accumulation on a DataParallel model (no all-reduce to skip), and
# accumulation in an evaluation-free helper whose model is not the DDP one.
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("nccl")
generator = DDP(torch.nn.Linear(8, 8).cuda(), device_ids=[0])
discriminator = DDP(torch.nn.Linear(8, 1).cuda(), device_ids=[0])
opt_g = torch.optim.Adam(generator.parameters())  # ACL309
opt_d = torch.optim.Adam(discriminator.parameters())  # ACL309


def train_gan(loader, n_critic):
    for i, real in enumerate(loader):
        fake = generator(torch.randn(8, 8, device="cuda"))
        loss_d = discriminator(fake.detach()).mean() - discriminator(real).mean()
        loss_d.backward()
        opt_d.step()  # ACL207
        opt_d.zero_grad()
        loss_g = -discriminator(fake).mean()
        loss_g.backward()
        if i % n_critic == 0:
            opt_g.step()
            opt_g.zero_grad()


def train_every_step(loader):
    for x in loader:
        generator(x).sum().backward()
        opt_g.step()
        opt_g.zero_grad()


def train_data_parallel(loader, accum):
    model = torch.nn.DataParallel(torch.nn.Linear(8, 2).cuda())  # ACL401
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for i, x in enumerate(loader):
        model(x).sum().backward()  # ACL310
        if (i + 1) % accum == 0:
            opt.step()
            opt.zero_grad()
