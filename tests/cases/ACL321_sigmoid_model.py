# ACL321: binary cross-entropy on a model of the file whose last layer is an nn.Sigmoid.
import torch
import torch.nn.functional as F
from torch import nn


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(
            nn.Linear(4, 8),
            nn.ReLU(),
            nn.Linear(8, 1),
            nn.Sigmoid(),
        )

    def forward(self, x):
        return self.body(x)


class Head(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 1)
        self.act = nn.Sigmoid()

    def forward(self, x):
        h = self.fc(x)
        return self.act(h)


class Scorer(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 1)

    def forward(self, x):
        return torch.sigmoid(self.fc(x))


classifier = Classifier().cuda()
head = Head().to("cuda")
scorer = Scorer().cuda()
stack = nn.Sequential(nn.Linear(4, 1), nn.Sigmoid()).cuda()
criterion = nn.BCELoss()
params = [*classifier.parameters(), *head.parameters(), *scorer.parameters()]
opt = torch.optim.SGD([*params, *stack.parameters()], lr=0.1)


def train(loader):
    classifier.train()
    for x, y in loader:
        opt.zero_grad()
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = criterion(classifier(x), y)  # ACL321
            probs = head(x)
            loss = loss + F.binary_cross_entropy(probs, y)  # ACL321
            loss = loss + criterion(scorer(x), y)  # ACL321
            loss = loss + F.binary_cross_entropy(stack(x), y)  # ACL321
        loss.backward()
        opt.step()
    torch.save(classifier.state_dict(), "classifier.pt")


# no fix: the model's probabilities are needed elsewhere: its output thresholded, the
# model run again for predictions, passed on, its class built twice, or run by its
# own methods
class Tagger(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(4, 1), nn.Sigmoid())

    def forward(self, x):
        return self.net(x)


class Detector(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(4, 1), nn.Sigmoid())

    def forward(self, x):
        return self.net(x)

    def predict(self, x):
        return self(x) > 0.5


thresholded = nn.Sequential(nn.Linear(4, 1), nn.Sigmoid()).cuda()
evaluated = nn.Sequential(nn.Linear(4, 1), nn.Sigmoid()).cuda()
passed = nn.Sequential(nn.Linear(4, 1), nn.Sigmoid()).cuda()
tagger = Tagger().cuda()
other_tagger = Tagger().cuda()
detector = Detector().cuda()


def accuracy(loader):
    for x, y in loader:
        with torch.autocast("cuda", dtype=torch.bfloat16):
            out = thresholded(x)
            loss = criterion(out, y)  # ACL321
        hits = ((out > 0.5) == y).float().mean()
        loss.backward()
        print(hits.item())


def run_model(model, x):
    return model(x)


def elsewhere(loader, val_x):
    for x, y in loader:
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = criterion(evaluated(x), y)  # ACL321
            loss = loss + criterion(passed(x), y)  # ACL321
            loss = loss + criterion(tagger(x), y)  # ACL321
            loss = loss + criterion(detector(x), y)  # ACL321
        loss.backward()
    print(evaluated(val_x), run_model(passed, val_x), other_tagger(val_x), detector.predict(val_x))
