# ACL403: where the save writes. One file per rank, memory and temporary files are
# private to a process; a file opened by every rank is not.
import io
import os
import tempfile

import torch
import torch.distributed as dist

dist.init_process_group("gloo")
local_rank = int(os.environ["LOCAL_RANK"])
model = torch.nn.Linear(4, 2)

# should not flag
torch.save(model, f"ckpt_{local_rank}.pt")
torch.save(model, "ckpt_{}.pt".format(dist.get_rank()))
torch.save(model, "ckpt_%d.pt" % int(os.environ["RANK"]))
torch.save(model, os.path.join("out", "rank" + str(local_rank), "model.pt"))
per_rank = f"shard-{dist.get_rank()}.pt"
torch.save(model, per_rank)
buffer = io.BytesIO()
torch.save(model.state_dict(), buffer)
torch.save(model.state_dict(), io.BytesIO())
with tempfile.TemporaryDirectory() as tmp:
    torch.save(model, os.path.join(tmp, "model.pt"))
with tempfile.NamedTemporaryFile() as handle:
    torch.save(model, handle)


def save_to(path):
    torch.save(model, path)


save_to(f"worker{local_rank}.pt")

# should flag
torch.save(model, os.path.join("out", "model.pt"))  # ACL403
with open("model.pt", "wb") as f:
    # the with block holds only the save: the fix guards the whole block
    torch.save(model, f)  # ACL403
with open("both.pt", "wb") as f:
    torch.save(model, f)  # ACL403
    f.flush()
opened = open("opened.pt", "wb")
torch.save(model, opened)  # ACL403
torch.save(model, f=f"model-{model.out_features}.pt")  # ACL403
