# A float32 MLP trained on CUDA from main(); the environment and the scheduler step
# first, the finding is on the first optimizer step.
import gymnasium as gym
import torch
from torch import nn


def main():
    device = "cuda" if torch.cuda.is_available() else "cpu"
    env = gym.make("CartPole-v1")
    policy = nn.Sequential(nn.Linear(4, 64), nn.Tanh(), nn.Linear(64, 2)).to(device)
    optimizer = torch.optim.Adam(policy.parameters(), lr=3e-4)  # ACL309
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, 100)
    obs, _ = env.reset()
    for step in range(1000):
        logits = policy(torch.as_tensor(obs, device=device))
        action = torch.distributions.Categorical(logits=logits).sample()
        obs, reward, done, _, _ = env.step(action.item())  # ACL308
        if step % 10 == 0:
            scheduler.step()
        loss = -logits.log_softmax(-1)[action] * reward
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()  # ACL207
        if done:
            obs, _ = env.reset()


if __name__ == "__main__":
    main()
