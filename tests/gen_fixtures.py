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
    torch_streams.bin  torch's generator: words, base seed, uniform_/bernoulli_/randperm draws,
                   the example's initial parameters (seeds 42, 1), the first 3 steps' masks
    sampler.bin    DistributedSampler shards, epoch 1 train / epoch 0 test, W = 1, 2, 3
    replay.bin     the example's first 20 steps on real MNIST at W = 1, 2: losses, parameters
    example_epoch1_w{1,2,3}.txt  the lines horovodrun -np W prints for the first epoch, per rank
    example_epoch1_params.bin, example_test_epoch1_weights.txt  the W = 1 weights after epoch 1
                   and the Test line a test pass over them prints at W = 1, 2, 3
The last three read real MNIST from data/MNIST/raw (make data); W > 1 is simulated in one
process with Horovod's semantics (each rank's own generator copy and shard, Average = sum times
float32 1/size, lr * size). These float32 runs are torch's own numbers, not float64 references.
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


# ---------------------------------------------------------------------------------------------
# PyTorch's random streams (src/torch_streams.h): what the Horovod example draws from torch's
# generators, and the example itself replayed on real MNIST.

class ExampleNet(nn.Module):
    """Horovod's examples/pytorch/pytorch_mnist.py Net, as written there (real dropouts)."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 10, kernel_size=5)
        self.conv2 = nn.Conv2d(10, 20, kernel_size=5)
        self.conv2_drop = nn.Dropout2d()
        self.fc1 = nn.Linear(320, 50)
        self.fc2 = nn.Linear(50, 10)

    def forward(self, x):
        x = F.relu(F.max_pool2d(self.conv1(x), 2))
        x = F.relu(F.max_pool2d(self.conv2_drop(self.conv2(x)), 2))
        x = x.view(-1, 320)
        x = F.relu(self.fc1(x))
        x = F.dropout(x, training=self.training)
        x = self.fc2(x)
        return F.log_softmax(x, dim=1)


def as_int32_bits(t):
    """Unsigned 32-bit values (in an int64 tensor) stored as int32 with the same bits."""
    t = t.to(torch.int64)
    return torch.where(t >= 2 ** 31, t - 2 ** 32, t).to(torch.int32)


def words_consumed(state_before, state_after):
    """32-bit words a generator handed out between two get_state()s (THGeneratorState: seed,
    left, seeded, next, state[624]...); valid within one block of 624 or across whole blocks."""
    _, left0, _, next0 = struct.unpack_from("<QiiQ", state_before.numpy().tobytes(), 0)
    _, left1, _, next1 = struct.unpack_from("<QiiQ", state_after.numpy().tobytes(), 0)
    return (next1 - next0) % 624 if left0 != 1 else next1


def gen_torch_streams():
    out = []
    # Raw words: random_(0, 2^32 - 1) on int64 draws one word each, word % (2^32 - 1).
    torch.manual_seed(42)
    s0 = torch.get_rng_state()
    w = torch.empty(600, dtype=torch.int64).random_(0, 2 ** 32 - 1)
    assert words_consumed(s0, torch.get_rng_state()) == 600
    out.append(("seed42.words_mod", as_int32_bits(w)))
    # The DataLoader base seed draw: int64 random_() = random64() mod 2^63 (two words).
    torch.manual_seed(42)
    s0 = torch.get_rng_state()
    b = torch.empty((), dtype=torch.int64).random_()
    assert words_consumed(s0, torch.get_rng_state()) == 2
    bv = int(b.item())
    out.append(("seed42.base_seed", as_int32_bits(torch.tensor([bv & 0xffffffff, bv >> 32]))))
    # uniform_ on float32 (one word each) and bernoulli_ on float32 (two words each), seed 5.
    torch.manual_seed(5)
    out.append(("seed5.uniform", torch.empty(1000).uniform_(-0.3, 0.7)))
    s0 = torch.get_rng_state()
    out.append(("seed5.bernoulli50", torch.empty(300).bernoulli_(0.5)))
    assert words_consumed(s0, torch.get_rng_state()) == 600
    out.append(("seed5.bernoulli30", torch.empty(200).bernoulli_(0.3)))
    g = torch.Generator()
    g.manual_seed(3)
    out.append(("seed3.randperm1000", torch.randperm(1000, generator=g)))
    # The example's initial parameters: torch.manual_seed(seed); Net().
    for seed in (42, 1):
        torch.manual_seed(seed)
        s0 = torch.get_rng_state()
        model = ExampleNet()
        assert words_consumed(s0, torch.get_rng_state()) == 624  # 21840 = 35 blocks, 1 word each
        out.append(("init%d.params" % seed, flat_params(model)))
    # The dropout masks of the example's first 3 steps (seed 42, batch 64): after Net() and the
    # train loader's base seed, each forward draws Dropout2d's (64,20,1,1) then dropout's (64,50).
    torch.manual_seed(42)
    model = ExampleNet()
    torch.empty((), dtype=torch.int64).random_()  # iter(train_loader)
    for step in range(3):
        m2d = torch.empty(64, 20, 1, 1).bernoulli_(0.5).div_(0.5)
        m = torch.empty(64, 50).bernoulli_(0.5).div_(0.5)
        out += [("step%d.mask2d" % step, m2d.reshape(64, 20)), ("step%d.mask" % step, m)]
    check_masks_are_the_forwards()
    return out


def check_masks_are_the_forwards():
    """The masks drawn by hand above are the ones the real forward draws: same outputs, bit for
    bit, and the generator ends in the same state."""
    torch.manual_seed(42)
    model = ExampleNet()
    model.train()
    x = torch.randn(64, 1, 28, 28)
    state = torch.get_rng_state()
    real = model(x)
    after = torch.get_rng_state()
    torch.set_rng_state(state)
    m2d = torch.empty(64, 20, 1, 1).bernoulli_(0.5).div_(0.5)
    m = torch.empty(64, 50).bernoulli_(0.5).div_(0.5)
    assert torch.equal(torch.get_rng_state(), after)
    h = F.relu(F.max_pool2d(model.conv1(x), 2))
    h = F.relu(F.max_pool2d(model.conv2(h) * m2d, 2)).view(-1, 320)
    h = F.relu(model.fc1(h)) * m
    assert torch.equal(F.log_softmax(model.fc2(h), dim=1), real), "masks differ from the forward's"


def gen_sampler():
    """DistributedSampler indices of epoch 1 (train) and epoch 0 (test: never set_epoch), W=1..3."""
    import torch.utils.data.distributed as tud
    out = []
    for split, n, epoch in (("train", 60000, 1), ("test", 10000, 0)):
        for W in (1, 2, 3):
            for r in range(W):
                s = tud.DistributedSampler(range(n), num_replicas=W, rank=r)
                s.set_epoch(epoch)
                out.append(("%s.W%d.r%d" % (split, W, r), torch.tensor(list(iter(s)))))
    return out


def read_idx(path):
    with open(path, "rb") as f:
        data = f.read()
    magic, count = struct.unpack_from(">II", data, 0)
    if magic == 2051:
        rows, cols = struct.unpack_from(">II", data, 8)
        x = torch.frombuffer(bytearray(data[16:]), dtype=torch.uint8).reshape(count, 1, rows, cols)
        # torchvision: ToTensor (p / 255 in float32), Normalize((0.1307,), (0.3081,))
        return (x.float().div(255) - 0.1307) / 0.3081
    return torch.frombuffer(bytearray(data[8:]), dtype=torch.uint8).long()


MNIST_RAW = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "MNIST", "raw")


_MNIST = {}


def load_mnist(train):
    pre = "train" if train else "t10k"
    if pre not in _MNIST:
        _MNIST[pre] = (read_idx(os.path.join(MNIST_RAW, pre + "-images-idx3-ubyte")),
                       read_idx(os.path.join(MNIST_RAW, pre + "-labels-idx1-ubyte")))
    return _MNIST[pre]


class Example:
    """The Horovod example at W ranks, simulated in one process: every rank seeds torch 42 and
    builds Net() (so all hold the same weights, which broadcast_parameters keeps), draws its
    loader seeds and masks from its own copy of the default generator, computes its gradient on
    its own DistributedSampler shard; hvd's Average allreduce = sum / size; lr = 0.01 * size;
    SGD(momentum=0.5)."""

    def __init__(self, W, seed=42):
        import torch.utils.data.distributed as tud
        self.W = W
        torch.manual_seed(seed)
        self.model = ExampleNet()
        self.states = [torch.get_rng_state() for _ in range(W)]
        self.opt = torch.optim.SGD(self.model.parameters(), lr=0.01 * W, momentum=0.5)
        self.train_x, self.train_y = load_mnist(True)
        self.test_x, self.test_y = load_mnist(False)
        self.train_samplers = [tud.DistributedSampler(range(60000), num_replicas=W, rank=r)
                               for r in range(W)]
        self.test_samplers = [tud.DistributedSampler(range(10000), num_replicas=W, rank=r)
                              for r in range(W)]

    def on_rank(self, r, fn):
        torch.set_rng_state(self.states[r])
        v = fn()
        self.states[r] = torch.get_rng_state()
        return v

    def base_seed(self):
        return torch.empty((), dtype=torch.int64).random_().item()

    def train(self, epoch, max_steps=None, log_interval=10, lines=None, losses=None):
        self.model.train()
        batches = []
        for r in range(self.W):
            self.train_samplers[r].set_epoch(epoch)
            idx = torch.tensor(list(iter(self.train_samplers[r])))
            batches.append(idx.split(64))
            self.on_rank(r, self.base_seed)
        nb = len(batches[0])
        for b in range(nb if max_steps is None else max_steps):
            grads, step_losses = [], []
            for r in range(self.W):
                self.opt.zero_grad()
                i = batches[r][b]
                loss = self.on_rank(r, lambda: F.nll_loss(self.model(self.train_x[i]), self.train_y[i]))
                loss.backward()
                grads.append([p.grad.clone() for p in self.model.parameters()])
                step_losses.append(loss.item())
                if lines is not None and b % log_interval == 0:
                    lines.append("[%d]<stdout>:Train Epoch: %d [%d/%d (%.0f%%)]\tLoss: %.6f" % (
                        r, epoch, b * len(i), len(self.train_samplers[r]), 100. * b / nb, loss.item()))
            for k, p in enumerate(self.model.parameters()):
                total = grads[0][k].clone()
                for r in range(1, self.W):
                    total += grads[r][k]
                p.grad = total * torch.tensor(1.0 / self.W)  # Average: postscale by 1/size in float32
            self.opt.step()
            if losses is not None:
                losses.append(torch.tensor(step_losses))

    def test(self, lines):
        self.model.eval()
        loss_avg, acc_avg = torch.zeros(()), torch.zeros(())
        for r in range(self.W):
            self.on_rank(r, self.base_seed)
            idx = torch.tensor(list(iter(self.test_samplers[r])))
            test_loss, test_accuracy = 0., 0.
            for i in idx.split(1000):
                output = self.model(self.test_x[i])
                test_loss += F.nll_loss(output, self.test_y[i], reduction="sum").item()
                pred = output.data.max(1, keepdim=True)[1]
                test_accuracy += pred.eq(self.test_y[i].view_as(pred)).float().sum()
            test_loss /= len(self.test_samplers[r])
            test_accuracy /= len(self.test_samplers[r])
            loss_avg += torch.tensor(test_loss)  # metric_average: a float32 tensor, allreduced
            acc_avg += test_accuracy.clone().detach()  # torch.tensor(val) of a float32 tensor
        loss_avg, acc_avg = loss_avg * torch.tensor(1.0 / self.W), acc_avg * torch.tensor(1.0 / self.W)
        lines += ["[0]<stdout>:", "[0]<stdout>:Test set: Average loss: %.4f, Accuracy: %.2f%%" % (
            loss_avg.item(), 100. * acc_avg.item()), "[0]<stdout>:"]


def gen_replay():
    """20 steps of the example at W=1 and W=2 (dropout on), real MNIST (data/MNIST/raw)."""
    torch.set_num_threads(1)
    out = []
    for W in (1, 2):
        ex = Example(W)
        losses = []
        out.append(("W%d.params0" % W, flat_params(ex.model)))
        ex.train(1, max_steps=20, losses=losses)
        out += [("W%d.losses" % W, torch.stack(losses)), ("W%d.params20" % W, flat_params(ex.model))]
    return out


def write_example_lines(outdir):
    """The lines horovodrun -np W prints for the example's first epoch (--epochs 1, defaults),
    per rank in order (the interleaving between ranks is not fixed), W = 1, 2, 3."""
    torch.set_num_threads(1)
    trained = None
    for W in (1, 2, 3):
        ex = Example(W)
        lines = []
        ex.train(1, lines=lines)
        ex.test(lines)
        if W == 1:
            trained = {k: v.clone() for k, v in ex.model.state_dict().items()}
            write_fixture(os.path.join(outdir, "example_epoch1_params.bin"),
                          [("W1.params", flat_params(ex.model))])
        path = os.path.join(outdir, "example_epoch1_w%d.txt" % W)
        with open(path, "w") as f:
            f.write("\n".join(lines) + "\n")
        print("wrote %s (%d lines)" % (path, len(lines)))
    # The test pass alone at W = 1, 2, 3 over the same weights (the example's after its first
    # epoch at W = 1): which samples each rank's shard holds, padding included, decides these.
    weights = trained
    path = os.path.join(outdir, "example_test_epoch1_weights.txt")
    with open(path, "w") as f:
        for W in (1, 2, 3):
            ex = Example(W)
            ex.model.load_state_dict(weights)
            lines = []
            ex.test(lines)
            f.write("W=%d %s\n" % (W, lines[1][len("[0]<stdout>:"):]))
    print("wrote %s" % path)


def main():
    outdir = sys.argv[1] if len(sys.argv) > 1 else "tests/fixtures"
    os.makedirs(outdir, exist_ok=True)
    gens = [("conv2d.bin", gen_conv2d), ("pool.bin", gen_pool), ("linear.bin", gen_linear),
            ("activation.bin", gen_activation), ("loss.bin", gen_loss),
            ("sgd_kernel.bin", gen_sgd_kernel), ("net.bin", gen_net),
            ("sgd_steps.bin", gen_sgd_steps), ("torch_streams.bin", gen_torch_streams),
            ("sampler.bin", gen_sampler), ("replay.bin", gen_replay)]
    for i, (fname, gen) in enumerate(gens):
        torch.manual_seed(1000 + i)
        write_fixture(os.path.join(outdir, fname), gen())
    write_example_lines(outdir)


if __name__ == "__main__":
    main()
