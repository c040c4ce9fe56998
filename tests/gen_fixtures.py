#!/usr/bin/python3
"""Write the PyTorch reference fixtures that tests/test_kernels.cc and tests/test_net.cc read.

Usage: /usr/bin/python3 tests/gen_fixtures.py tests/fixtures      (or: make fixtures)

File format (all little-endian; reader: tests/fixture.h):
    magic    8 bytes  b"BSGDFIX1"
    version  uint32   1
    count    uint32   number of tensors
    count times:
        name_len uint32, name bytes (UTF-8, no terminator)
        dtype    uint32   0 = float32, 1 = int32
        ndim     uint32
        dims     int64[ndim]
        data     numel * 4 bytes, raw row-major

Precision: every input (data, weights, upstream grads, masks) is drawn as float32, so the C++ side
sees exactly the same numbers; outputs and gradients are then computed by torch in float64
(autograd) from those values and rounded once to float32. The references are therefore the
correctly rounded results for the float32 inputs, not another float32 implementation's rounding.

Everything is deterministic: torch.manual_seed fixes all draws; rerunning gives identical files.
Files:
    conv2d.bin pool.bin linear.bin activation.bin loss.bin sgd_kernel.bin   per-kernel cases
    net.bin        the Horovod MNIST seed model, one forward/backward with fixed dropout masks
    sgd_steps.bin  10 SGD(lr=0.01, momentum=0.5) steps of that model, dropout off
"""
import os
import struct
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

MAGIC = b"BSGDFIX1"
VERSION = 1


def write_fixture(path, tensors):
    """tensors: list of (name, tensor); float tensors are stored as float32, integer ones int32."""
    with open(path, "wb") as f:
        f.write(MAGIC)
        f.write(struct.pack("<II", VERSION, len(tensors)))
        names = set()
        for name, t in tensors:
            assert name not in names, name
            names.add(name)
            t = torch.as_tensor(t).detach().cpu().contiguous()
            if t.is_floating_point():
                dtype, t = 0, t.to(torch.float32)
            else:
                dtype, t = 1, t.to(torch.int32)
            nb = name.encode()
            f.write(struct.pack("<I", len(nb)))
            f.write(nb)
            f.write(struct.pack("<II", dtype, t.dim()))
            f.write(struct.pack("<%dq" % t.dim(), *t.shape))
            f.write(t.numpy().astype("<f4" if dtype == 0 else "<i4").tobytes())
    print("wrote %s (%d tensors, %d bytes)" % (path, len(tensors), os.path.getsize(path)))


def randf(*shape, scale=1.0):
    """float32 normal draws, returned as float64 holding exactly those float32 values."""
    return (torch.randn(*shape, dtype=torch.float32) * scale).to(torch.float32).double()


def mnist_like(*shape):
    """Normalized-MNIST-looking input: ~75% background pixels, the rest random 0..255."""
    pix = torch.randint(0, 256, shape).float()
    pix = pix * (torch.rand(shape) < 0.25).float()
    return ((pix / 255.0 - 0.1307) / 0.3081).to(torch.float32).double()


def leaf(t):
    return t.clone().requires_grad_(True)


# ---------------------------------------------------------------------------------------------
def gen_conv2d():
    out = []
    # name, N, C, H, W, OC, KH, KW
    cases = [("a", 3, 2, 9, 7, 4, 3, 3),      # odd everything, square kernel
             ("b", 2, 3, 8, 10, 5, 2, 4),     # non-square kernel
             ("conv1", 2, 1, 28, 28, 10, 5, 5),
             ("conv2", 2, 10, 12, 12, 20, 5, 5)]
    for name, N, C, H, W, OC, KH, KW in cases:
        x = mnist_like(N, C, H, W) if name == "conv1" else randf(N, C, H, W)
        fan_in = C * KH * KW
        w = randf(OC, C, KH, KW, scale=fan_in ** -0.5)
        b = randf(OC, scale=0.1)
        xl, wl, bl = leaf(x), leaf(w), leaf(b)
        y = F.conv2d(xl, wl, bl)
        dy = randf(*y.shape)
        y.backward(dy)
        p = name + "."
        out += [(p + "shape", torch.tensor([N, C, H, W, OC, KH, KW])),
                (p + "x", x), (p + "w", w), (p + "b", b), (p + "dy", dy), (p + "y", y),
                (p + "dx", xl.grad), (p + "dw", wl.grad), (p + "db", bl.grad)]
    return out


def gen_pool():
    out = []
    # name, N, C, H, W, k
    cases = [("a", 2, 3, 7, 9, 2),    # odd H, W: floor drops the last row / column
             ("b", 1, 2, 9, 10, 3),
             ("net1", 2, 10, 24, 24, 2),
             ("net2", 2, 20, 8, 8, 2),
             ("ties", 2, 2, 6, 6, 2)]   # small integers: many ties, first max must win
    for name, N, C, H, W, k in cases:
        if name == "ties":
            x = torch.randint(0, 3, (N, C, H, W)).double()
        else:
            x = randf(N, C, H, W)
        xl = leaf(x)
        y, idx = F.max_pool2d(xl, k, return_indices=True)
        dy = randf(*y.shape)
        y.backward(dy)
        p = name + "."
        out += [(p + "shape", torch.tensor([N, C, H, W, k])), (p + "x", x), (p + "dy", dy),
                (p + "y", y), (p + "idx", idx), (p + "dx", xl.grad)]
    return out


def gen_linear():
    out = []
    for name, N, IN, OUT in [("a", 5, 7, 3), ("fc1", 4, 320, 50), ("fc2", 4, 50, 10)]:
        x = randf(N, IN)
        w = randf(OUT, IN, scale=IN ** -0.5)
        b = randf(OUT, scale=0.1)
        xl, wl, bl = leaf(x), leaf(w), leaf(b)
        y = F.linear(xl, wl, bl)
        dy = randf(N, OUT)
        y.backward(dy)
        p = name + "."
        out += [(p + "shape", torch.tensor([N, IN, OUT])), (p + "x", x), (p + "w", w),
                (p + "b", b), (p + "dy", dy), (p + "y", y), (p + "dx", xl.grad),
                (p + "dw", wl.grad), (p + "db", bl.grad)]
    return out


def gen_activation():
    out = []
    # relu, with some exact zeros (gradient there is 0 in PyTorch)
    x = randf(7, 13)
    x[0, :3] = 0.0
    xl = leaf(x)
    y = F.relu(xl)
    dy = randf(7, 13)
    y.backward(dy)
    out += [("relu.x", x), ("relu.dy", dy), ("relu.y", y), ("relu.dx", xl.grad)]

    # dropout: PyTorch's own dropout draws the mask; recover it from the output and check the scale
    for name, p in [("dropout_p30", 0.3), ("dropout_p50", 0.5)]:
        x = randf(11, 17)
        x[x == 0] = 1.0
        xl = leaf(x)
        y = F.dropout(xl, p=p, training=True)
        mask = torch.where(y == 0, torch.zeros_like(y), torch.full_like(y, 1.0 / (1.0 - p)))
        assert torch.allclose(y, x * mask, rtol=1e-12, atol=0), name
        dy = randf(11, 17)
        y.backward(dy)
        out += [(name + ".p", torch.tensor([p], dtype=torch.float64)), (name + ".x", x),
                (name + ".mask", mask.detach()), (name + ".dy", dy), (name + ".y", y),
                (name + ".dx", xl.grad)]

    # dropout2d on (N,C,H,W): whole channels zeroed
    N, C, H, W = 4, 6, 3, 5
    x = randf(N, C, H, W)
    x[x == 0] = 1.0
    xl = leaf(x)
    y = F.dropout2d(xl, p=0.5, training=True)
    mask = (y.abs().sum(dim=(2, 3)) != 0).double() * 2.0
    assert torch.allclose(y, x * mask[:, :, None, None], rtol=1e-12, atol=0)
    dy = randf(N, C, H, W)
    y.backward(dy)
    out += [("dropout2d.shape", torch.tensor([N, C, H, W])), ("dropout2d.x", x),
            ("dropout2d.mask", mask), ("dropout2d.dy", dy), ("dropout2d.y", y),
            ("dropout2d.dx", xl.grad)]
    return out


def gen_loss():
    out = []
    # log_softmax: random rows, plus one row with huge logits (overflows a naive exp in float)
    for name, N, C in [("lsm_a", 6, 10), ("lsm_b", 3, 7)]:
        x = randf(N, C, scale=3.0)
        if name == "lsm_a":
            x[1] += 200.0
            x[2] -= 150.0
            x = x.float().double()  # keep the inputs exactly float32-representable
        xl = leaf(x)
        y = F.log_softmax(xl, dim=1)
        dy = randf(N, C)
        y.backward(dy)
        out += [(name + ".shape", torch.tensor([N, C])), (name + ".x", x), (name + ".dy", dy),
                (name + ".y", y), (name + ".dx", xl.grad)]

    # nll_loss on given log-probabilities, mean and sum, upstream gradient dloss
    N, C = 9, 10
    logp = F.log_softmax(randf(N, C, scale=2.0), dim=1).float().double()
    target = torch.randint(0, C, (N,))
    dloss = 0.7
    res = [("nll.shape", torch.tensor([N, C])), ("nll.logp", logp), ("nll.target", target),
           ("nll.dloss", torch.tensor([dloss], dtype=torch.float64))]
    for red in ["mean", "sum"]:
        ll = leaf(logp)
        loss = F.nll_loss(ll, target, reduction=red)
        (loss * dloss).backward()
        res += [("nll.loss_" + red, loss.reshape(1)), ("nll.dlogp_" + red, ll.grad)]
    out += res

    # composite: loss = nll_loss(log_softmax(x), target) (mean), dx for dloss = 1
    N, C = 8, 10
    x = randf(N, C, scale=2.0)
    target = torch.randint(0, C, (N,))
    xl = leaf(x)
    loss = F.nll_loss(F.log_softmax(xl, dim=1), target)
    loss.backward()
    out += [("lsm_nll.shape", torch.tensor([N, C])), ("lsm_nll.x", x),
            ("lsm_nll.target", target), ("lsm_nll.loss", loss.reshape(1)),
            ("lsm_nll.dx", xl.grad)]
    return out


def gen_sgd_kernel():
    out = []
    n, steps = 37, 4
    for name, lr, momentum in [("a", 0.01, 0.5), ("b", 0.1, 0.9)]:
        p = nn.Parameter(randf(n))
        p0 = p.detach().clone()
        g = randf(steps, n)
        opt = torch.optim.SGD([p], lr=lr, momentum=momentum)
        ps, bufs = [], []
        for s in range(steps):
            opt.zero_grad()
            p.grad = g[s].clone()
            opt.step()
            ps.append(p.detach().clone())
            bufs.append(opt.state[p]["momentum_buffer"].clone())
        out += [(name + ".hyper", torch.tensor([lr, momentum], dtype=torch.float64)),
                (name + ".p0", p0), (name + ".g", g), (name + ".p", torch.stack(ps)),
                (name + ".buf", torch.stack(bufs))]
    return out


# ---------------------------------------------------------------------------------------------
class Net(nn.Module):
    """Horovod's examples/pytorch/pytorch_mnist.py model; dropouts replaced by fixed masks."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 10, kernel_size=5)
        self.conv2 = nn.Conv2d(10, 20, kernel_size=5)
        self.fc1 = nn.Linear(320, 50)
        self.fc2 = nn.Linear(50, 10)

    def forward(self, x, mask2d=None, mask=None):
        x = F.relu(F.max_pool2d(self.conv1(x), 2))
        x = self.conv2(x)
        if mask2d is not None:  # conv2_drop = Dropout2d(p=0.5)
            x = x * mask2d[:, :, None, None]
        x = F.relu(F.max_pool2d(x, 2))
        x = x.view(-1, 320)
        x = F.relu(self.fc1(x))
        if mask is not None:  # F.dropout(x, training=True), p=0.5
            x = x * mask
        x = self.fc2(x)
        return F.log_softmax(x, dim=1)


PARAM_ORDER = ["conv1.weight", "conv1.bias", "conv2.weight", "conv2.bias",
               "fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"]


def flat_params(model):
    d = dict(model.named_parameters())
    return torch.cat([d[k].detach().reshape(-1) for k in PARAM_ORDER])


def flat_grads(model):
    d = dict(model.named_parameters())
    return torch.cat([d[k].grad.detach().reshape(-1) for k in PARAM_ORDER])


def seed_model():
    # The example's torch.manual_seed(args.seed=42) then Net(): PyTorch's default init drawn in
    # float32 (so the stored params are exact), then the model is computed in float64.
    torch.manual_seed(42)
    model = Net()
    assert model.conv1.weight.dtype == torch.float32
    assert [k for k, _ in model.named_parameters()] == PARAM_ORDER
    return model.double()


def gen_net():
    model = seed_model()
    params = flat_params(model)
    assert params.numel() == 21840
    torch.manual_seed(2)
    x = mnist_like(8, 1, 28, 28)
    target = torch.randint(0, 10, (8,))
    mask2d = torch.bernoulli(torch.full((8, 20), 0.5, dtype=torch.float64)) * 2.0
    mask = torch.bernoulli(torch.full((8, 50), 0.5, dtype=torch.float64)) * 2.0
    logp = model(x, mask2d, mask)
    loss = F.nll_loss(logp, target)
    loss.backward()
    grad = flat_grads(model)
    return [("x", x), ("target", target), ("params", params), ("mask2d", mask2d),
            ("mask", mask), ("logp", logp), ("loss", loss.reshape(1)), ("grad", grad)]


def gen_sgd_steps():
    model = seed_model()
    params0 = flat_params(model)
    torch.manual_seed(3)
    steps, batch = 10, 16
    x = mnist_like(steps, batch, 1, 28, 28)
    target = torch.randint(0, 10, (steps, batch))
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.5)
    losses = []
    for s in range(steps):
        opt.zero_grad()
        loss = F.nll_loss(model(x[s]), target[s])  # dropout off (masks = 1)
        loss.backward()
        opt.step()
        losses.append(loss.detach())
    return [("params0", params0), ("x", x), ("target", target),
            ("losses", torch.stack(losses)), ("params10", flat_params(model))]


def main():
    outdir = sys.argv[1] if len(sys.argv) > 1 else "tests/fixtures"
    os.makedirs(outdir, exist_ok=True)
    gens = [("conv2d.bin", gen_conv2d), ("pool.bin", gen_pool), ("linear.bin", gen_linear),
            ("activation.bin", gen_activation), ("loss.bin", gen_loss),
            ("sgd_kernel.bin", gen_sgd_kernel), ("net.bin", gen_net),
            ("sgd_steps.bin", gen_sgd_steps)]
    for i, (fname, gen) in enumerate(gens):
        torch.manual_seed(1000 + i)
        write_fixture(os.path.join(outdir, fname), gen())


if __name__ == "__main__":
    main()
