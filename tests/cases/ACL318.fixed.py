# ACL318: the gradients zeroed on every micro-batch of an accumulation.
import torch
from torch import nn

model = nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)


def modulo(loader, accum):
    for i, (x, y) in enumerate(loader):
        loss = nn.functional.mse_loss(model(x), y) / accum
        loss.backward()
        if (i + 1) % accum == 0:
            opt.step()
            opt.zero_grad()


def last_of_window(loader, accum):
    for i, (x, y) in enumerate(loader):
        loss = nn.functional.mse_loss(model(x), y) / accum
        loss.backward()
        if i % accum == accum - 1:
            opt.step()
            opt.zero_grad()


def since_last_step(loader, accum):
    last_step = 0
    for step, (x, y) in enumerate(loader):
        loss = nn.functional.mse_loss(model(x), y) / accum
        loss.backward()
        if step - last_step >= accum:
            opt.step()
            last_step = step
            opt.zero_grad(set_to_none=True)
            continue


def flagged(loader, accum):
    for i, (x, y) in enumerate(loader):
        should_step = (i + 1) % accum == 0 or i == len(loader) - 1
        loss = nn.functional.mse_loss(model(x), y) / accum
        loss.backward()
        if should_step:
            opt.step()
            opt.zero_grad()


def micro_batches(batches, iters, accum):
    for it in range(iters):
        for micro in range(accum):
            x, y = next(batches)
            (nn.functional.mse_loss(model(x), y) / accum).backward()
        opt.step()
        opt.zero_grad()


def manual_loop(loader, accum):
    for i, (x, y) in enumerate(loader):
        loss = nn.functional.mse_loss(model(x), y) / accum
        loss.backward()
        if (i + 1) % accum == 0:
            opt.step()
            for p in model.parameters():
                p.grad = None


class Trainer:
    def __init__(self, net, accum):
        self.net = net
        self.optimizer = torch.optim.AdamW(net.parameters(), lr=1e-3)
        self.accum = accum

    def train_step(self, i, x, y):
        loss = nn.functional.mse_loss(self.net(x), y) / self.accum
        loss.backward()
        if (i + 1) % self.accum == 0:
            self.optimizer.step()
            self.optimizer.zero_grad()

    def fit(self, loader):
        for i, (x, y) in enumerate(loader):
            self.train_step(i, x, y)


def helper_zeroes(loader, accum):
    for i, (x, y) in enumerate(loader):
        reset()  # the reset lives in a function: reported there, not moved
        loss = nn.functional.mse_loss(model(x), y) / accum
        loss.backward()
        if (i + 1) % accum == 0:
            opt.step()


def reset():
    opt.zero_grad()


# should not flag: zeroed in the step branch, a loop that steps every iteration,
# a critic's extra steps on another optimizer, a GAN that alternates its optimizers,
# another optimizer's gradients
def correct(loader, accum):
    for i, (x, y) in enumerate(loader):
        loss = nn.functional.mse_loss(model(x), y) / accum
        loss.backward()
        if (i + 1) % accum == 0:
            opt.step()
            opt.zero_grad()


def every_iteration(loader):
    for x, y in loader:
        opt.zero_grad()
        nn.functional.mse_loss(model(x), y).backward()
        opt.step()


def wgan(loader, generator, critic, n_critic, z_dim):
    opt_g = torch.optim.RMSprop(generator.parameters(), lr=5e-5)
    opt_c = torch.optim.RMSprop(critic.parameters(), lr=5e-5)
    for i, real in enumerate(loader):
        opt_c.zero_grad()
        fake = generator(torch.randn(real.shape[0], z_dim)).detach()
        loss_c = critic(fake).mean() - critic(real).mean()
        loss_c.backward()
        opt_c.step()
        if i % n_critic == 0:
            opt_g.zero_grad()
            loss_g = -critic(generator(torch.randn(real.shape[0], z_dim))).mean()
            loss_g.backward()
            opt_g.step()


def alternating(loader, generator, critic):
    opt_g = torch.optim.Adam(generator.parameters())
    opt_c = torch.optim.Adam(critic.parameters())
    for i, (x, z) in enumerate(loader):
        opt_g.zero_grad()
        opt_c.zero_grad()
        if i % 2 == 0:
            (-critic(generator(z)).mean()).backward()
            opt_g.step()
        else:
            (critic(generator(z).detach()).mean() - critic(x).mean()).backward()
            opt_c.step()


def other_optimizer(loader, accum, probe):
    probe_opt = torch.optim.SGD(probe.parameters(), lr=0.1)
    for i, (x, y) in enumerate(loader):
        probe_opt.zero_grad()
        loss = nn.functional.mse_loss(model(x), y) / accum
        loss.backward()
        if (i + 1) % accum == 0:
            opt.step()
            opt.zero_grad()
