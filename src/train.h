// train: the train and test loops of the Horovod PyTorch MNIST example over any Communicator,
// printing the example's exact log lines (train lines on every rank, test results on rank 0).
#pragma once
#include <cstdio>

#include "comm/communicator.h"
#include "src/options.h"

// Runs the whole job on this rank. Throws std::runtime_error (data, comm, I/O) with one line.
// out: where the log lines go (stdout in ./train).
void run_training(const Options& opts, Communicator& comm, std::FILE* out);
