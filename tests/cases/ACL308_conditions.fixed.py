# ACL308: tensor-valued conditions and syncs guarded to one rank still wait every step.
import torch
import torch.distributed as dist


def train(model, optimizer, loader, rank, best):
    model.cuda()
    for x, y in loader:
        loss = torch.nn.functional.mse_loss(model(x.cuda()), y.cuda())
        if not torch.isfinite(loss):
            continue
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        if loss > best:
            best = loss.detach()
        if rank == 0:
            print(f"loss {loss.item():.4f}")
        if dist.get_rank() == 0:
            torch.save(model.state_dict(), "last.pt")


# Not flagged: conditions on Python numbers, every N steps on rank 0, `.numpy()` of
# host data.
def fine(model, optimizer, loader, rank):
    model.cuda()
    for step, (x, y) in enumerate(loader):
        loss = torch.nn.functional.mse_loss(model(x.cuda()), y.cuda())
        loss.backward()
        optimizer.step()
        if step > 100:
            break
        if rank == 0 and step % 100 == 0:
            print(loss.item())
        weights = y.numpy()
        if weights.sum() > 0:
            pass
