# A loss rebound from itself (`loss = loss.mean()`, as trainers do after DataParallel)
# is followed once, not forever: the walk of its bindings once recursed until Python's
# limit, a false ACL000 that hid every finding of the file.
import torch


class Trainer:
    def __init__(self, model, loss):
        self.device = torch.device("cuda")
        self.model = model.to(self.device)
        self.loss = loss
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=0.1)

    def train_epoch(self, loader):
        for data, target in loader:
            data, target = data.to(self.device), target.to(self.device)
            output = self.model(data)
            loss = self.loss(output, target)
            if isinstance(self.loss, torch.nn.DataParallel):
                loss = loss.mean()
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()
            print(loss.item())
