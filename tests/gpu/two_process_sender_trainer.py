# SPDX-License-Identifier: Apache-2.0
"""The PyTorch side of tests/gpu/two_process_sender_test.sh (2 GPUs, PyTorch with CUDA).

A trainer on GPU 0 joins a Wharf replica group as rank 0 with tools/sender/wharf_sender.py;
a Wharf server process (build/tests/wharf_sender_server, CUDA backend) on GPU 1 is rank 1.
The trainer pushes its initial weights, the server serves a fixed input; the trainer takes
one SGD step, pushes again (from the same GPU tensors, ordered after the optimizer on the
current stream), and the server serves again. Each served output must equal PyTorch's for
the weights pushed, and the step must have changed them. Prints PASS and exits 0, or raises.
"""

import argparse
import json
import math
import os
import subprocess
import sys

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tools", "sender"))
import wharf_sender as ws  # noqa: E402


class MLP(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(16, 8)
        self.fc2 = torch.nn.Linear(8, 4)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--server", required=True)
    ap.add_argument("--trainer-device", type=int, default=0)
    ap.add_argument("--server-device", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=120)
    a = ap.parse_args()

    torch.cuda.set_device(a.trainer_device)
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    model = MLP().cuda()
    x = torch.tensor([[math.sin(0.1 * (b * 16 + i)) for i in range(16)] for b in range(2)],
                     dtype=torch.float32, device="cuda")

    gid = ws.make_group_id()
    server = subprocess.Popen([a.server, "--id", gid.hex(), "--rank", "1", "--size", "2", "--device",
                               str(a.server_device), "--rounds", "2", "--timeout-ms", str(int(a.timeout * 1000))],
                              stdout=subprocess.PIPE, text=True)
    try:
        sender = ws.WharfSender(gid, 2, timeout=a.timeout)
        print("joined: NCCL", sender.t.nccl.path, flush=True)

        sender.push(model.state_dict())
        before = json.loads(server.stdout.readline())
        with torch.no_grad():
            y0 = model(x).flatten().cpu()
        served0 = torch.tensor(before["y"])
        print("before: wharf", served0.tolist(), "torch", y0.tolist(), flush=True)
        assert torch.allclose(served0, y0, rtol=1e-4, atol=1e-5), "served before != PyTorch"

        # One SGD step: new weights, written by the optimizer on the current stream.
        opt = torch.optim.SGD(model.parameters(), lr=0.5)
        target = torch.linspace(-1, 1, 8, device="cuda").reshape(2, 4)
        loss = torch.nn.functional.mse_loss(model(x), target)
        opt.zero_grad()
        loss.backward()
        opt.step()
        sender.push(model.state_dict())  # no synchronize: ordered after opt.step on the stream
        after = json.loads(server.stdout.readline())
        with torch.no_grad():
            y1 = model(x).flatten().cpu()
        served1 = torch.tensor(after["y"])
        print("after:  wharf", served1.tolist(), "torch", y1.tolist(), flush=True)
        assert after["generation"] == before["generation"] + 1, (before, after)
        assert torch.allclose(served1, y1, rtol=1e-4, atol=1e-5), "served after != PyTorch with the new weights"
        assert not torch.allclose(y0, y1), "the SGD step changed nothing"
        sender.close()
        assert server.wait(timeout=a.timeout) == 0, "the server failed"
        print("PASS: the Wharf server served PyTorch's outputs before and after the push", flush=True)
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()


if __name__ == "__main__":
    main()
