#!/usr/bin/python3
"""Write the Horovod reference fixtures for Adasum and the Average path's scaling order.

Usage: /usr/bin/python3 tests/gen_adasum_fixtures.py tests/fixtures      (or: make fixtures)
File format and reader: tests/gen_fixtures.py / tests/fixture.h (BSGDFIX1).

Horovod itself is not imported (it is not installed); its arithmetic is rebuilt in plain torch
from its source, simulating the ranks in one process:

adasum_steps.bin: horovod/torch/optimizer.py _DistributedAdasumOptimizer with torch.optim.SGD
    (lr 0.01, not scaled; momentum 0.5) on the seed MNIST model, dropout off, W = 2 and 4.
    Every rank has its own float32 model copy and its own optimizer (so its own momentum buffer,
    never re-synchronised), and its own batch. Per step and parameter tensor, as Horovod does:
        start = p.clone(); optimizer.step(); p -= start           (float32: the delta)
        delta = Adasum over the ranks (horovod/common/ops/adasum/adasum.h)
        p = start + delta                                        (float32)
    Adasum follows adasum.h's FusedAllreduce: level d = 1, 2, 4, ... combines the vector of ranks
    [b, b+d) with that of [b+d, b+2d) for b a multiple of 2d; per tensor with
    dot = a.b, |a|^2, |b|^2 in float64, acoeff = 1 - dot / |a|^2 * 0.5 unless |a|^2 < sqrt(DBL_MIN)
    (then 1), likewise bcoeff, and the result acoeff * a + bcoeff * b in float64 rounded to
    float32 (ScaledAdd on a float32 buffer). Gradients are computed in float64 from the float32
    parameters and rounded once to float32 (as tests/gen_fixtures.py), so they are the correctly
    rounded gradients; everything after them is float32 / float64 exactly as Horovod has it.
    The batches come from the first data seed whose trajectories keep every max-pool and ReLU
    choice at least MARGIN from a tie (seed 11 had a max-pool window whose two largest values
    were < 1e-6 apart at step 5, where float32 kernels can pick the other one).
    Tensors: params0 (21840), x (steps, 4, B, 1, 28, 28), target (steps, 4, B) (W = 2 uses
    ranks 0 and 1), hyper [lr, momentum], w{W}.params (steps, 21840): every rank's parameters
    after each step, w{W}.coef (steps, log2 W, 8, 2): acoeff, bcoeff per level and tensor.

horovod_scaling.bin: the Average path of horovod/torch/optimizer.py + ScaleBuffer
    (horovod/common/ops/collective_operations.h) on a CPU float32 tensor and with Compression.fp16:
        prescale = float32(1.0 / f), postscale = float32(f / W) (Python floats cast to float)
        float32:  g * prescale (float32), sum over ranks, * postscale (float32)
        fp16:     h = g.half(); h = half(float(h) * prescale); sum of halves (each addition in
                  float rounded to half, ranks in order); h = half(float(h) * postscale);
                  out = h.float() (decompress)
    Per case c: c.hyper [W, f, prescale, postscale], c.g (W, n), c.pre (W, n), c.sum (n),
    c.out (n), c.h (W, n), c.hpre (W, n), c.hsum (n), c.hout (n) (halves stored as float32).
    Also adasum16.*: Horovod's fp16 Adasum of two ranks (gen_adasum_fp16).
"""
import math
import os
import sys
from fractions import Fraction

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gen_fixtures import PARAM_ORDER, flat_params, mnist_like, seed_model, write_fixture  # noqa: E402

DBL_MIN = sys.float_info.min
SQRT_DBL_MIN = math.sqrt(DBL_MIN)
STEPS, BATCH, MAX_W = 5, 8, 4
LR, MOMENTUM = 0.01, 0.5
MARGIN = 1e-6  # activations are O(0.1 .. 1); float32 kernels differ from float64 by ~1e-7 there


def adasum_pair(a, b):
    """adasum.h's FusedPairwiseReduceWithComm for one tensor: float32 a, b -> float32."""
    a64, b64 = a.double(), b.double()
    dot = float(torch.dot(a64, b64))
    anormsq, bnormsq = float(torch.dot(a64, a64)), float(torch.dot(b64, b64))
    acoeff = 1.0 - dot / anormsq * 0.5 if anormsq >= SQRT_DBL_MIN else 1.0
    bcoeff = 1.0 - dot / bnormsq * 0.5 if bnormsq >= SQRT_DBL_MIN else 1.0
    return (acoeff * a64 + bcoeff * b64).to(torch.float32), (acoeff, bcoeff)


def adasum(vectors):
    """The VHDD tree over len(vectors) (a power of two) ranks; returns the result and
    the coefficients [level][(acoeff, bcoeff)] of the group that holds rank 0."""
    v = list(vectors)
    coefs = []
    d = 1
    while d < len(v):
        level = None
        for r in range(0, len(v), 2 * d):
            v[r], c = adasum_pair(v[r], v[r + d])
            if r == 0:
                level = c
        coefs.append(level)
        d *= 2
    return v[0], coefs


def rank_gradients(model, params32, x, target):
    """float64 gradients of model (the seed model in float64) at the float32 params, rounded
    to float32."""
    named = dict(model.named_parameters())
    with torch.no_grad():
        for k, p in zip(PARAM_ORDER, params32):
            named[k].copy_(p.double())
            named[k].grad = None
    loss = F.nll_loss(model(x), target)
    loss.backward()
    return [named[k].grad.to(torch.float32) for k in PARAM_ORDER]


def adasum_run(W, params0, x, target):
    model = seed_model()  # float64; its parameters are overwritten for every gradient
    ranks = []
    for _ in range(W):
        ps = [torch.nn.Parameter(t.clone()) for t in params0]
        ranks.append((ps, torch.optim.SGD(ps, lr=LR, momentum=MOMENTUM)))
    after, coefs = [], []
    for s in range(STEPS):
        deltas, starts = [], []
        for r, (ps, opt) in enumerate(ranks):
            grads = rank_gradients(model, [p.detach() for p in ps], x[s, r], target[s, r].long())
            for p, g in zip(ps, grads):
                p.grad = g
            starts.append([p.detach().clone() for p in ps])
            opt.step()
            with torch.no_grad():
                deltas.append([(p - st).reshape(-1) for p, st in zip(ps, starts[-1])])
        step_coefs = [[None] * len(PARAM_ORDER) for _ in range(int(math.log2(W)))]
        for t in range(len(PARAM_ORDER)):
            combined, c = adasum([deltas[r][t] for r in range(W)])
            for lvl, ab in enumerate(c):
                step_coefs[lvl][t] = ab
            for r, (ps, _) in enumerate(ranks):
                with torch.no_grad():
                    ps[t].copy_(starts[r][t] + combined.reshape(ps[t].shape))
        flats = [torch.cat([p.detach().reshape(-1) for p in ps]) for ps, _ in ranks]
        for f in flats[1:]:
            assert torch.equal(f, flats[0])
        after.append(flats[0])
        coefs.append(torch.tensor(step_coefs, dtype=torch.float64))
    return torch.stack(after), torch.stack(coefs)


def near_discrete_choice(model, flat, x):
    """True when, at float64 parameters `flat`, some max-pool window's two largest values differ
    by less than MARGIN (but are not equal) or some ReLU input is within MARGIN of zero (but not
    zero): there float32 rounding in another implementation could flip the choice and change
    the gradient discontinuously, which would test the kernels' luck, not Adasum."""
    named = dict(model.named_parameters())
    off = 0
    with torch.no_grad():
        for k in PARAM_ORDER:
            n = named[k].numel()
            named[k].copy_(flat[off:off + n].double().reshape(named[k].shape))
            off += n
        c1 = model.conv1(x)
        p1 = F.max_pool2d(c1, 2)
        c2 = model.conv2(F.relu(p1))
        p2 = F.max_pool2d(c2, 2)
        z = model.fc1(F.relu(p2).reshape(-1, 320))
    for c, side in ((c1, 24), (c2, 8)):
        top = F.unfold(c.reshape(-1, 1, side, side), 2, stride=2).sort(dim=1, descending=True).values
        gap = top[:, 0] - top[:, 1]
        if bool(((gap > 0) & (gap < MARGIN)).any()):
            return True
    return any(bool(((t != 0) & (t.abs() < MARGIN)).any()) for t in (p1, p2, z))


def trajectory_has_near_choice(params0_flat, runs, x, W):
    model = seed_model()
    starts = [params0_flat] + [runs[s] for s in range(STEPS - 1)]
    return any(near_discrete_choice(model, starts[s], x[s, r]) for s in range(STEPS) for r in range(W))


def gen_adasum_steps():
    """Batches from the first data seed (11, 12, ...) whose W = 2 and W = 4 trajectories keep
    every max-pool and ReLU choice at least MARGIN away from a tie (see near_discrete_choice)."""
    model = seed_model()
    params0_flat = flat_params(model).to(torch.float32)
    named = dict(model.named_parameters())
    params0 = [named[k].detach().to(torch.float32) for k in PARAM_ORDER]
    for data_seed in range(11, 100):
        torch.manual_seed(data_seed)
        x = mnist_like(STEPS, MAX_W, BATCH, 1, 28, 28)
        target = torch.randint(0, 10, (STEPS, MAX_W, BATCH))
        out = [("params0", params0_flat), ("x", x), ("target", target),
               ("hyper", torch.tensor([LR, MOMENTUM], dtype=torch.float64))]
        clean = True
        for W in (2, 4):
            p, c = adasum_run(W, params0, x, target)
            out += [("w%d.params" % W, p), ("w%d.coef" % W, c)]
            clean = clean and not trajectory_has_near_choice(params0_flat, p, x, W)
        if clean:
            print("adasum_steps: data seed %d (no max-pool or ReLU choice within %g of a tie)"
                  % (data_seed, MARGIN))
            return out
    raise RuntimeError("no data seed in 11..99 keeps the choices away from ties")


def gradient_like(W, n):
    """Per-rank float32 values over many magnitudes (normal halves, subnormal halves, big)."""
    scale = torch.logspace(-7, 2, n, dtype=torch.float64)[torch.randperm(n)]
    return (torch.randn(W, n, dtype=torch.float64) * scale).to(torch.float32)


def half_sum(rows):
    acc = rows[0]
    for r in rows[1:]:
        acc = (acc.float() + r.float()).half()
    return acc


def scaling_case(name, W, f, n=1031):
    pre = torch.tensor(1.0 / f, dtype=torch.float32)
    post = torch.tensor(f / W, dtype=torch.float32)
    g = gradient_like(W, n)
    scaled = g * pre if 1.0 / f != 1.0 else g.clone()
    total = scaled[0].clone()
    for r in range(1, W):
        total = total + scaled[r]
    out = total * post if f / W != 1.0 else total.clone()
    h = g.half()
    hpre = (h.float() * pre).half() if 1.0 / f != 1.0 else h.clone()
    hsum = half_sum([hpre[r] for r in range(W)])
    hout = (hsum.float() * post).half() if f / W != 1.0 else hsum.clone()
    hyper = torch.tensor([W, f, float(pre), float(post)], dtype=torch.float64)
    return [(name + ".hyper", hyper), (name + ".g", g), (name + ".pre", scaled), (name + ".sum", total),
            (name + ".out", out), (name + ".h", h.float()), (name + ".hpre", hpre.float()),
            (name + ".hsum", hsum.float()), (name + ".hout", hout.float())]


def gen_scaling():
    out = gen_adasum_fp16()
    for name, W, f in (("w2f3", 2, 3.0), ("w2f07", 2, 0.7), ("w3f1", 3, 1.0), ("w4f25", 4, 2.5)):
        out += scaling_case(name, W, f)
    return out


def lanes_dot(x, y):
    """adasum.h's ComputeDotAndNormSqrdsfp16 over one slice (Python floats holding halves):
    element i in double lane i % 4 (the products are exact), lanes summed (0+2)+(1+3)."""
    lanes = [0.0, 0.0, 0.0, 0.0]
    for i, (u, v) in enumerate(zip(x, y)):
        lanes[i % 4] += u * v
    return (lanes[0] + lanes[2]) + (lanes[1] + lanes[3])


def fma_to_half(cb, b, t):
    """half(float32(cb * b + t)) with one rounding to float32 (ScaledAddfp16's _mm256_fmadd_ps
    then _mm256_cvtps_ph); the double holding cb * b + t is asserted exact."""
    exact = Fraction(cb) * Fraction(b) + Fraction(t)
    d = float(exact)
    assert Fraction(d) == exact, "fma emulation is not exact in double"
    return torch.tensor(d, dtype=torch.float64).to(torch.float32).half()


def gen_adasum_fp16():
    """Horovod's fp16 Adasum (adasum.h, AVX path) over W = 2 ranks holding a and b, segments
    `counts`: rank 0 keeps [0, n/2) and rank 1 the rest; each slice's dot products over 4 lanes,
    the two ranks' partial sums added, then out = half(fma(float(bcoeff), peer, float(acoeff) *
    own)) with own = a on rank 0's half and own = b on rank 1's."""
    counts = [7, 1000, 24]
    n = sum(counts)
    a = gradient_like(1, n)[0].half().double()
    b = (gradient_like(1, n)[0] * 0.5 + a.float() * 0.5).half().double()  # correlated with a
    keep = [(0, n // 2), (n // 2, n)]
    out = torch.zeros(n, dtype=torch.float16)
    coefs = []
    off = 0
    for cnt in counts:
        dot = aa = bb = 0.0
        parts = []
        for lo, hi in keep:
            s0, s1 = max(off, lo), min(off + cnt, hi)
            x, y = a[s0:s1].tolist(), b[s0:s1].tolist()
            parts.append((lanes_dot(x, y), lanes_dot(x, x), lanes_dot(y, y)))
        dot, aa, bb = (parts[0][k] + parts[1][k] for k in range(3))
        ca = 1.0 - dot / aa * 0.5 if aa >= SQRT_DBL_MIN else 1.0
        cb = 1.0 - dot / bb * 0.5 if bb >= SQRT_DBL_MIN else 1.0
        coefs.append((ca, cb))
        ca32, cb32 = float(torch.tensor(ca).float()), float(torch.tensor(cb).float())
        for i in range(off, off + cnt):
            own, peer, c_own, c_peer = (a, b, ca32, cb32) if i < n // 2 else (b, a, cb32, ca32)
            t = float(torch.tensor(c_own * float(own[i])).float())  # float32(c * own), exact product
            out[i] = fma_to_half(c_peer, float(peer[i]), t)
        off += cnt
    return [("adasum16.counts", torch.tensor(counts)), ("adasum16.a", a), ("adasum16.b", b),
            ("adasum16.out", out.float()), ("adasum16.coef", torch.tensor(coefs, dtype=torch.float64))]


def main():
    outdir = sys.argv[1] if len(sys.argv) > 1 else "tests/fixtures"
    os.makedirs(outdir, exist_ok=True)
    for i, (fname, gen) in enumerate([("adasum_steps.bin", gen_adasum_steps),
                                      ("horovod_scaling.bin", gen_scaling)]):
        torch.manual_seed(2000 + i)
        write_fixture(os.path.join(outdir, fname), gen())


if __name__ == "__main__":
    main()
