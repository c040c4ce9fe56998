// train: the train and test loops of the Horovod PyTorch MNIST example over any Communicator,
// printing the example's exact log lines (train lines on every rank, test results on rank 0).
#pragma once
#include <cstdio>

#include "comm/communicator.h"
#include "src/mnist.h"
#include "src/options.h"
#include "src/thread_policy.h"

struct TrainData {
  MnistSplit train, test;
};
// Loads and validates both splits; called before the communicator connects, so a bad file fails
// on every rank before any rendezvous or collective. Throws DataError naming the file.
TrainData load_train_data(const Options& opts);

// Runs the whole job on this rank with threads.compute_threads compute threads (train_main decided
// them). Throws std::runtime_error (comm, I/O) with one line. out: where the log lines go (stdout in
// ./train). Returns the exit status: 0, or 128 + the signal (SIGTERM, SIGUSR1) that stopped it at a
// step every rank agreed on, saved there (src/stop_signal.h).
int run_training(const Options& opts, const ThreadPolicy& threads, TrainData& data, Communicator& comm, std::FILE* out);
