# torch_mnist: the PyTorch side of the benchmark: the Horovod PyTorch MNIST example (seed) on torch.distributed gloo,
# with its gradients averaged by a manual fused allreduce (default) or by DistributedDataParallel (--ddp).
#
# One process per rank, started by bench/run_bench.sh (run with /usr/bin/python3):
#   torch_mnist.py --rank R --world W (--init-file /tmp/dir/store | --init-method tcp://HOST:PORT)
#                  [--ddp] [--epochs 1] [--data-dir data] [--threads N] [--timeout S]
# Same model, DistributedSampler(shuffle, seed 0), DataLoader (num_workers 0, as the example on
# CPU), SGD(lr * W, momentum), the example's log lines, and the example's test (sum loss, accuracy,
# averaged over ranks, printed by rank 0) in both modes. Averaging the gradients:
#   default  initial broadcast from rank 0, then one fused allreduce of all gradients per step after
#            backward, followed by /W (Horovod's op=Average over its fusion buffer);
#   --ddp    torch.nn.parallel.DistributedDataParallel over the same gloo process group: it
#            broadcasts rank 0's parameters when it wraps the model, then averages the gradients in
#            buckets whose allreduce starts during backward as soon as a bucket's gradients are
#            ready (the first bucket holds up to 1 MiB: all 87 KB of this net's gradients).
# Rendezvous: --init-file (a FileStore, every rank on this machine) or --init-method tcp://HOST:PORT
# (rank 0 listens there: the ranks may be in different network namespaces; GLOO_SOCKET_IFNAME in
# the environment picks the interface gloo binds). --timeout S bounds the rendezvous and every
# collective (default 300), so a missing peer ends the run instead of hanging it.
# Threads: torch.set_num_threads(max(1, 2 // W)) unless --threads is given.
# With W == 1 no process group is created (nothing to reduce); --ddp needs W >= 2.
# A bad command line is one line on stderr and exit 2.
#
# Prints to stderr, per rank, the machine-readable line bench/report.py reads:
#   timing: startup_s=S train_s=T test_s=E threads=N
# startup_s: from BENCH_T0 (the driver's clock just before it started this process; else this
# script's first line) to the first training step; train_s: the training loop of the epoch(s)
# (data loading, forward, backward, allreduce, step, logging); test_s: the test pass(es);
# threads: torch's intra-op threads in this rank.
import time

_T_SCRIPT = time.time()

import argparse
import datetime
import os
import sys
import threading

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler
from torchvision import datasets, transforms


class Net(nn.Module):
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


class OneLineParser(argparse.ArgumentParser):
    """argparse whose errors are one line: 'torch_mnist.py: error: ...' and exit 2."""

    def error(self, message):
        die(message)


def die(message):
    print("torch_mnist.py: error: " + message, file=sys.stderr, flush=True)
    sys.exit(2)


def parse_args():
    p = OneLineParser(description="The Horovod PyTorch MNIST example on torch.distributed gloo (benchmark).")
    p.add_argument("--rank", type=int, default=0)
    p.add_argument("--world", type=int, default=1)
    p.add_argument("--init-file", default="", help="torch.distributed FileStore path (W > 1, ranks on this machine)")
    p.add_argument("--init-method", default="", help="tcp://HOST:PORT where rank 0 listens (W > 1)")
    p.add_argument("--ddp", action="store_true", help="average the gradients with DistributedDataParallel")
    p.add_argument("--timeout", type=float, default=300.0, help="seconds for the rendezvous and each collective")
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--test-batch-size", type=int, default=1000)
    p.add_argument("--lr", type=float, default=0.01)
    p.add_argument("--momentum", type=float, default=0.5)
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--log-interval", type=int, default=10)
    p.add_argument("--data-dir", default="data")
    p.add_argument("--threads", type=int, default=0)
    args = p.parse_args()
    if args.world < 1:
        die("--world {} must be at least 1".format(args.world))
    if not 0 <= args.rank < args.world:
        die("--rank {} is not in 0..{} (--world {})".format(args.rank, args.world - 1, args.world))
    for name in ("epochs", "batch_size", "test_batch_size", "log_interval"):
        if getattr(args, name) < 1:
            die("--{} {} must be at least 1".format(name.replace("_", "-"), getattr(args, name)))
    if args.threads < 0:
        die("--threads {} must be 0 (automatic) or more".format(args.threads))
    if not args.timeout > 0:
        die("--timeout {} must be a positive number of seconds".format(args.timeout))
    if args.ddp and args.world < 2:
        die("--ddp needs --world 2 or more (one rank has nothing to average)")
    if args.world > 1 and bool(args.init_file) == bool(args.init_method):
        die("--world {} needs exactly one of --init-file PATH and --init-method tcp://HOST:PORT".format(args.world))
    if args.init_method and not args.init_method.startswith("tcp://"):
        die("--init-method '{}' is not tcp://HOST:PORT".format(args.init_method))
    if not os.path.isdir(os.path.join(args.data_dir, "MNIST", "raw")):
        die("no MNIST in --data-dir '{}' (expected {}/MNIST/raw; run 'make data')".format(args.data_dir, args.data_dir))
    return args


def join_group(args):
    """The gloo process group of W > 1 ranks (FileStore or TCP rendezvous)."""
    url = args.init_method or "file://" + os.path.abspath(args.init_file)
    dist.init_process_group("gloo", init_method=url, rank=args.rank, world_size=args.world,
                            timeout=datetime.timedelta(seconds=args.timeout))


def loaders(args):
    """(train sampler, train loader, test sampler, test loader): this rank's shard of each set."""
    tf = transforms.Compose([transforms.ToTensor(), transforms.Normalize((0.1307,), (0.3081,))])
    train_dataset = datasets.MNIST(args.data_dir, train=True, download=False, transform=tf)
    train_sampler = DistributedSampler(train_dataset, num_replicas=args.world, rank=args.rank)
    train_loader = DataLoader(train_dataset, batch_size=args.batch_size, sampler=train_sampler)
    test_dataset = datasets.MNIST(args.data_dir, train=False, download=False, transform=tf)
    test_sampler = DistributedSampler(test_dataset, num_replicas=args.world, rank=args.rank)
    test_loader = DataLoader(test_dataset, batch_size=args.test_batch_size, sampler=test_sampler)
    return train_sampler, train_loader, test_sampler, test_loader


def manual_averaging(model, world):
    """The default mode: rank 0's parameters broadcast now; returns the per-step averaging, one
    fused allreduce over a flat copy of every gradient (Horovod's fusion buffer), then /W."""
    for t in model.state_dict().values():
        dist.broadcast(t, 0)
    params = list(model.parameters())

    def average_gradients():
        grads = [q.grad for q in params]
        flat = torch.cat([g.reshape(-1) for g in grads])
        dist.all_reduce(flat)
        flat.div_(world)
        off = 0
        for g in grads:
            n = g.numel()
            g.copy_(flat[off:off + n].view_as(g))
            off += n
    return average_gradients


def metric_average(val, world):
    t = torch.tensor(float(val))
    if world > 1:
        dist.all_reduce(t)
        t /= world
    return t.item()


def train_epoch(args, epoch, step_model, optimizer, average_gradients, train_sampler, train_loader):
    """One epoch of the example's training loop; step_model is the DDP wrapper with --ddp."""
    step_model.train()
    train_sampler.set_epoch(epoch)
    for batch_idx, (data, target) in enumerate(train_loader):
        optimizer.zero_grad()
        output = step_model(data)
        loss = F.nll_loss(output, target)
        loss.backward()  # with --ddp the buckets' allreduces run during this and are awaited at its end
        if average_gradients:
            average_gradients()
        optimizer.step()
        if batch_idx % args.log_interval == 0:
            print("Train Epoch: {} [{}/{} ({:.0f}%)]\tLoss: {:.6f}".format(
                epoch, batch_idx * len(data), len(train_sampler),
                100. * batch_idx / len(train_loader), loss.item()), flush=True)


def test(args, model, test_sampler, test_loader):
    """The example's test on this rank's shard, averaged over ranks, printed by rank 0."""
    model.eval()
    test_loss = 0.
    test_accuracy = 0.
    with torch.no_grad():
        for data, target in test_loader:
            output = model(data)
            test_loss += F.nll_loss(output, target, reduction="sum").item()
            pred = output.max(1, keepdim=True)[1]
            test_accuracy += pred.eq(target.view_as(pred)).float().sum().item()
    test_loss = metric_average(test_loss / len(test_sampler), args.world)
    test_accuracy = metric_average(test_accuracy / len(test_sampler), args.world)
    if args.rank == 0:
        print("\nTest set: Average loss: {:.4f}, Accuracy: {:.2f}%\n".format(
            test_loss, 100. * test_accuracy), flush=True)


def leave_group():
    """destroy_process_group, bounded: PyTorch 1.13's rank 0 (the TCPStore's host) was seen to hang
    in it for good once rank 1 had left (over the namespace hosts' link, 1 ms delay). After 10 s it
    says so and exits 0: the epoch, its test and its timing line are already out."""
    t = threading.Thread(target=dist.destroy_process_group, daemon=True)
    t.start()
    t.join(10.0)
    if t.is_alive():
        print("torch_mnist.py: rank 0 destroy_process_group did not return within 10 s; exiting",
              file=sys.stderr, flush=True)
        sys.stdout.flush()
        os._exit(0)


def main():
    args = parse_args()
    t0 = float(os.environ.get("BENCH_T0", _T_SCRIPT))
    world = args.world
    torch.manual_seed(args.seed)
    torch.set_num_threads(args.threads if args.threads > 0 else max(1, 2 // world))

    if world > 1:
        join_group(args)
    train_sampler, train_loader, test_sampler, test_loader = loaders(args)

    model = Net()
    optimizer = optim.SGD(model.parameters(), lr=args.lr * world, momentum=args.momentum)
    step_model, average_gradients = model, None
    if args.ddp:
        step_model = nn.parallel.DistributedDataParallel(model)  # broadcasts rank 0's parameters
    elif world > 1:
        average_gradients = manual_averaging(model, world)

    startup_s = None
    train_s = test_s = 0.0
    for epoch in range(1, args.epochs + 1):
        a = time.time()
        if startup_s is None:
            startup_s = a - t0
        train_epoch(args, epoch, step_model, optimizer, average_gradients, train_sampler, train_loader)
        b = time.time()
        train_s += b - a
        test(args, model, test_sampler, test_loader)  # the bare model: no DDP collectives in the test
        test_s += time.time() - b

    print("timing: startup_s={:.4f} train_s={:.4f} test_s={:.4f} threads={}".format(
        startup_s, train_s, test_s, torch.get_num_threads()), file=sys.stderr, flush=True)
    if world > 1:
        dist.barrier()
        leave_group()


if __name__ == "__main__":
    main()
