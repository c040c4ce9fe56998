// torch_streams: Net init and per-batch dropout masks from torch's default generator.
#include "src/torch_streams.h"

#include "src/net.h"

void TorchStreams::init_net(Net* net) { net->init(&gen); }

void TorchStreams::dropout_masks(Net* net, int n) { net->sample_dropout_masks(&gen, n, 0.5); }
