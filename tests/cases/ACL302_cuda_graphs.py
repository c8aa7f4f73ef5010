# ACL302: a CUDA graph replays into the gradient tensors it captured: they must stay
# allocated, so zero_grad(set_to_none=False) is required in a file that captures one.
import torch

model = torch.nn.Linear(4, 2).cuda()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
static_x = torch.randn(8, 4, device="cuda")

optimizer.zero_grad(set_to_none=False)
graph = torch.cuda.CUDAGraph()
with torch.cuda.graph(graph):
    static_loss = model(static_x).sum()
    static_loss.backward()

for _ in range(3):
    optimizer.zero_grad(set_to_none=False)
    graph.replay()
    optimizer.step()  # ACL207
