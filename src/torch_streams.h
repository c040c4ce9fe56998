// torch_streams: the random numbers the Horovod PyTorch MNIST example draws from torch's default
// CPU generator, drawn here from the same generator in the same order, so a run takes PyTorch's
// initial weights and dropout masks bit for bit. The example's order (every rank alike):
//   torch.manual_seed(args.seed)        seed(seed)
//   model = Net()                       init_net(): conv1, conv2, fc1, fc2 weights and biases
//   per epoch: enumerate(train_loader)  start_train_loader(): the iterator's base seed (2 words)
//     per batch: model(data)            dropout_masks(): Dropout2d (n*20), then dropout (n*50)
//   test(): for ... in test_loader      start_test_loader(): that iterator's base seed
// The DistributedSampler permutations come from their own generators (src/sampler.h).
// The state is plain data; checkpoints save it (src/checkpoint.h), so a resumed run goes on with
// the draws an uninterrupted one would make.
#pragma once
#include <cstdint>

#include "kernels/torch_generator.h"

class Net;

struct TorchStreams {
  TorchGenerator gen;  // torch's default CPU generator

  void seed(uint64_t seed) { torch_manual_seed(&gen, seed); }
  void init_net(Net* net);
  // iter(DataLoader): _BaseDataLoaderIter draws torch.empty((), dtype=int64).random_() even with
  // num_workers=0; the value is unused without workers, the two words it consumes are not.
  int64_t start_train_loader() { return torch_random_int64(&gen); }
  int64_t start_test_loader() { return torch_random_int64(&gen); }
  void dropout_masks(Net* net, int n);
};
