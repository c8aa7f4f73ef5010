# Evaluation code that records autograd graphs, and the evaluation code that does not.
import torch
import torch.nn.functional as F
from torch.autograd import Variable

model = torch.nn.Linear(8, 2)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)


def validate(model, val_loader):
    model.eval()
    correct, seen = 0, 0
    for x, y in val_loader:  # ACL311
        correct += (model(x).argmax(1) == y).sum().item()
        seen += y.size(0)
    return correct / seen


def predict(model, test_loader):
    preds = []
    for i, (x, _) in enumerate(test_loader):  # ACL311
        preds.append(model(x).softmax(1))
    return torch.cat(preds)


class Trainer:
    def __init__(self, model, val_loader):
        self.model = model
        self.val_loader = val_loader
        self.history = []

    def run_validation(self):
        self.model.eval()
        total = 0.0
        for x, y in self.val_loader:  # ACL311
            total += F.cross_entropy(self.model(x), y).item()
        self.history.append(total)


def test(net, testloader):
    # `volatile=True` switched graph recording off before torch 0.4; today it does nothing
    net.eval()
    for x, y in testloader:  # ACL311
        out = net(Variable(x, volatile=True))
        print(out.argmax(1))


def evaluate(model, loader):
    model.eval()
    losses = 0.0
    for x, y in loader:  # ACL311
        losses += F.cross_entropy(model(x), y).item()
    return losses


def main(train_loader, val_loader):
    for epoch in range(3):
        model.train()
        for x, y in train_loader:
            optimizer.zero_grad()
            F.cross_entropy(model(x), y).backward()
            optimizer.step()
        with torch.no_grad():
            evaluate(model, val_loader)
    evaluate(model, val_loader)  # one call site outside no_grad: `evaluate` is reported


# -- not reported --------------------------------------------------------------------


def validate_in_context(model, val_loader):
    model.eval()
    with torch.no_grad():
        for x, y in val_loader:
            model(x)


@torch.no_grad()
def validate_decorated(model, val_loader):
    model.eval()
    for x, y in val_loader:
        model(x)


@torch.inference_mode()
def predict_inference_mode(model, test_loader):
    return [model(x) for x, _ in test_loader]


def validate_switched_off(model, val_loader):
    torch.set_grad_enabled(False)
    for x, y in val_loader:
        model(x)
    torch.set_grad_enabled(True)


def evaluate_helper(model, val_loader):
    # every call site in the file is under no_grad
    model.eval()
    for x, y in val_loader:
        model(x)


def fit(model, val_loader):
    with torch.no_grad():
        evaluate_helper(model, val_loader)


def test_time_training(model, test_loader):
    # evaluation that adapts the model: it needs gradients
    model.eval()
    for x, y in test_loader:
        F.cross_entropy(model(x), y).backward()
        optimizer.step()


def saliency(model, val_loader):
    model.eval()
    for x, y in val_loader:
        x.requires_grad_()
        score = model(x).max()
        torch.autograd.grad(score, x)


def attack(model, test_loader):
    model.eval()
    for x, y in test_loader:
        with torch.enable_grad():
            model(x)


def test_shapes():
    # one forward pass, no loop over data
    net = torch.nn.Linear(8, 2)
    print(net(torch.randn(4, 8)).shape)


def validate_metrics(val_loader):
    # no module is called in the loop
    for x, y in val_loader:
        print(x.mean(), y.float().mean())


def train_epoch(model, loader):
    # neither `.eval()` nor an evaluation name: a name alone never decides
    for x, y in loader:
        model(x)


def infer_features(model, loader):
    feats = []
    for x, _ in loader:
        feats.append(model(x))
    return torch.cat(feats)


def distill(student, teacher, loader):
    # the caller backpropagates through what `infer_features` returns
    for x, _ in loader:
        target = infer_features(teacher, [(x, None)])
        loss = F.mse_loss(student(x), target)
        loss.backward()


teacher = torch.nn.Linear(8, 2)
teacher.requires_grad_(False)
backbone = torch.nn.Linear(8, 8)
for p in backbone.parameters():
    p.requires_grad = False


def evaluate_frozen(teacher, backbone, val_loader):
    # frozen modules record no graph
    teacher.eval()
    for x, y in val_loader:
        teacher(backbone(x))
