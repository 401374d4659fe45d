"""A PyTorch training loop without a single annotation, for `trainprof record --pytorch`
(tests/collector/test_pytorch_auto.py; torch, or the stand-in in torchstub/).

usage: pytorch_prog.py loader|accum|b2b|infer EPOCHS BATCHES
loader: for each epoch, `for batch in DataLoader:` with one update of the model's optimizer
        and one of a second optimizer (a GAN's discriminator: it ends no step) per batch;
accum:  the same loop with an update every second batch (gradient accumulation), and an
        evaluation loop over a DataLoader of 3 items (no backward pass) after each epoch;
b2b:    EPOCHS x BATCHES updates with no DataLoader (steps back to back);
infer:  the DataLoader loop of `loader` with forward passes only (no backward, no update),
        each ~5x a batch's decoding.
Prints "sitecustomize chained: yes/no" (a sitecustomize of the user's on PYTHONPATH ran) and
"path clean: yes/no" (the start-up file's folder left sys.path)."""
import os
import sys

import torch

mode, epochs, batches = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])


class Dataset:
    def __len__(self):
        return batches

    def __getitem__(self, i):
        return sum(k * k for k in range(100000))  # the batch's decoding: most of the loop


def work():
    sum(k * 0.5 for k in range(20000))  # forward
    if real:  # backward, as a program calls it: Tensor.backward() -> torch.autograd.backward
        (opt.param_groups[0]["params"][0] * 2).sum().backward()
    else:
        torch.autograd.backward([1.0])


real = hasattr(torch, "zeros")  # torch itself, or the stand-in
opt = torch.optim.SGD([torch.zeros(1, requires_grad=True)] if real else [1.0], lr=0.1)
disc = torch.optim.SGD([torch.zeros(1, requires_grad=True)] if real else [2.0], lr=0.1)
if mode == "loader":
    loader = torch.utils.data.DataLoader(Dataset())
    for epoch in range(epochs):
        for batch in loader:  # FOR
            work()
            opt.step()
            disc.step()
elif mode == "accum":  # two micro-batches an update, an evaluation loop after each epoch
    loader = torch.utils.data.DataLoader(Dataset())
    evaluation = torch.utils.data.DataLoader([0, 1, 2])
    for epoch in range(epochs):
        for i, batch in enumerate(loader):
            work()
            if i % 2 == 1:
                opt.step()
        for batch in evaluation:
            sum(k * 0.5 for k in range(20000))  # a forward pass, no backward
elif mode == "infer":
    loader = torch.utils.data.DataLoader(Dataset())
    for epoch in range(epochs):
        for batch in loader:
            sum(k * 0.5 for k in range(500000))  # a forward pass: most of this loop
else:
    for i in range(epochs * batches):
        work()
        opt.step()
print("sitecustomize chained:", "yes" if os.environ.get("USER_SITECUSTOMIZE") == "ran" else "no")
print("path clean:", "no" if any("trainprof-python" in p for p in sys.path) else "yes")
