# torch_mnist: the PyTorch side of the benchmark: the Horovod PyTorch MNIST example (seed) on torch.distributed gloo.
#
# One process per rank, started by bench/run_bench.sh (run with /usr/bin/python3):
#   torch_mnist.py --rank R --world W --init-file /tmp/dir/store [--epochs 1] [--data-dir data]
# Same model, DistributedSampler(shuffle, seed 0), DataLoader (num_workers 0, as the example on
# CPU), SGD(lr * W, momentum), initial broadcast from rank 0, one fused allreduce of all gradients
# per step followed by /W (Horovod's op=Average over its fusion buffer), the example's log lines,
# and the example's test (sum loss, accuracy, averaged over ranks, printed by rank 0).
# Threads: torch.set_num_threads(max(1, 2 // W)) unless --threads is given.
# With W == 1 no process group is created (nothing to reduce).
#
# Prints to stderr, per rank, the machine-readable line bench/report.py reads:
#   timing: startup_s=S train_s=T test_s=E
# startup_s: from BENCH_T0 (the driver's clock just before it started this process; else this
# script's first line) to the first training step; train_s: the training loop of the epoch(s)
# (data loading, forward, backward, allreduce, step, logging); test_s: the test pass(es).
import time

_T_SCRIPT = time.time()

import argparse
import os
import sys

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


def main():
    p = argparse.ArgumentParser(description="The Horovod PyTorch MNIST example on torch.distributed gloo (benchmark).")
    p.add_argument("--rank", type=int, default=0)
    p.add_argument("--world", type=int, default=1)
    p.add_argument("--init-file", default="", help="torch.distributed FileStore path (W > 1)")
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

    t0 = float(os.environ.get("BENCH_T0", _T_SCRIPT))
    rank, world = args.rank, args.world
    torch.manual_seed(args.seed)
    torch.set_num_threads(args.threads if args.threads > 0 else max(1, 2 // world))

    if world > 1:
        dist.init_process_group("gloo", init_method="file://" + os.path.abspath(args.init_file),
                                rank=rank, world_size=world)

    tf = transforms.Compose([transforms.ToTensor(), transforms.Normalize((0.1307,), (0.3081,))])
    train_dataset = datasets.MNIST(args.data_dir, train=True, download=False, transform=tf)
    train_sampler = DistributedSampler(train_dataset, num_replicas=world, rank=rank)
    train_loader = DataLoader(train_dataset, batch_size=args.batch_size, sampler=train_sampler)
    test_dataset = datasets.MNIST(args.data_dir, train=False, download=False, transform=tf)
    test_sampler = DistributedSampler(test_dataset, num_replicas=world, rank=rank)
    test_loader = DataLoader(test_dataset, batch_size=args.test_batch_size, sampler=test_sampler)

    model = Net()
    optimizer = optim.SGD(model.parameters(), lr=args.lr * world, momentum=args.momentum)
    params = list(model.parameters())
    if world > 1:
        for t in model.state_dict().values():
            dist.broadcast(t, 0)

    def average_gradients():
        # One fused allreduce over a flat copy of every gradient (Horovod's fusion buffer).
        grads = [q.grad for q in params]
        flat = torch.cat([g.reshape(-1) for g in grads])
        dist.all_reduce(flat)
        flat.div_(world)
        off = 0
        for g in grads:
            n = g.numel()
            g.copy_(flat[off:off + n].view_as(g))
            off += n

    def metric_average(val):
        t = torch.tensor(float(val))
        if world > 1:
            dist.all_reduce(t)
            t /= world
        return t.item()

    startup_s = None
    train_s = test_s = 0.0
    for epoch in range(1, args.epochs + 1):
        model.train()
        train_sampler.set_epoch(epoch)
        a = time.time()
        if startup_s is None:
            startup_s = a - t0
        for batch_idx, (data, target) in enumerate(train_loader):
            optimizer.zero_grad()
            output = model(data)
            loss = F.nll_loss(output, target)
            loss.backward()
            if world > 1:
                average_gradients()
            optimizer.step()
            if batch_idx % args.log_interval == 0:
                print("Train Epoch: {} [{}/{} ({:.0f}%)]\tLoss: {:.6f}".format(
                    epoch, batch_idx * len(data), len(train_sampler),
                    100. * batch_idx / len(train_loader), loss.item()), flush=True)
        b = time.time()
        train_s += b - a

        model.eval()
        test_loss = 0.
        test_accuracy = 0.
        with torch.no_grad():
            for data, target in test_loader:
                output = model(data)
                test_loss += F.nll_loss(output, target, reduction="sum").item()
                pred = output.max(1, keepdim=True)[1]
                test_accuracy += pred.eq(target.view_as(pred)).float().sum().item()
        test_loss /= len(test_sampler)
        test_accuracy /= len(test_sampler)
        test_loss = metric_average(test_loss)
        test_accuracy = metric_average(test_accuracy)
        if rank == 0:
            print("\nTest set: Average loss: {:.4f}, Accuracy: {:.2f}%\n".format(
                test_loss, 100. * test_accuracy), flush=True)
        test_s += time.time() - b

    print("timing: startup_s={:.4f} train_s={:.4f} test_s={:.4f}".format(startup_s, train_s, test_s),
          file=sys.stderr, flush=True)
    if world > 1:
        dist.barrier()
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
