# ACL314: a file that scales its loss through a helper is not reported.
import torch


def train_one_epoch(model, batches, optimizer, loss_scaler):
    for x, y in batches:
        with torch.cuda.amp.autocast():
            loss = torch.nn.functional.mse_loss(model(x), y)
        loss_scaler(loss, optimizer, parameters=model.parameters())
