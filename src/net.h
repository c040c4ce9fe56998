// net: the seed's MNIST CNN (Horovod PyTorch MNIST example) over one flat parameter buffer:
//   conv1 1->10 k5, max_pool 2, relu, conv2 10->20 k5, Dropout2d, max_pool 2, relu,
//   fc1 320->50, relu, dropout, fc2 50->10, log_softmax; loss nll.
// Gradients use the same flat layout, so the allreduce and the optimizer are one call each.
//
// The two conv -> [Dropout2d] -> max_pool -> relu blocks run as fused kernels over lane-blocked
// activations (kernels/convpool.h: 16 samples per vector, no im2col, no reorders). With threads > 1
// a batch is cut into slices of whole 16-sample blocks, one per thread; each slice runs the whole
// forward and backward pass on its own buffers and the slices' gradients are summed (the loss
// gradient is scaled by 1/n of the whole batch, so the sum is the batch mean). threads = 1 runs
// everything on the calling thread.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <new>
#include <vector>

#include "kernels/torch_generator.h"
#include "src/thread_team.h"

// One parameter tensor's place in the flat buffer.
struct ParamView {
  const char* name;
  size_t offset, count;
  int shape[4];  // unused dims are 0
};

// Allocator for the activation buffers: 64-byte (one vector, one cache line) aligned storage, so
// the kernels' 16-float vector loads never straddle two cache lines.
template <class T>
struct CacheAligned {
  using value_type = T;
  CacheAligned() = default;
  template <class U>
  CacheAligned(const CacheAligned<U>&) {}
  T* allocate(size_t n) {
    void* p = std::aligned_alloc(64, (n * sizeof(T) + 63) / 64 * 64);
    if (p == nullptr) throw std::bad_alloc();
    return static_cast<T*>(p);
  }
  void deallocate(T* p, size_t) { std::free(p); }
  template <class U>
  bool operator==(const CacheAligned<U>&) const {
    return true;
  }
  template <class U>
  bool operator!=(const CacheAligned<U>&) const {
    return false;
  }
};

// Told by Net::backward when a layer's gradients are final, in backward order: layer 3 (fc2),
// 2 (fc1), 1 (conv2), 0 (conv1); layer L holds tensors 2L and 2L+1 of Net::kParams. When the batch
// runs in one slice each call comes right after that layer's backward, on the calling thread, while
// the layers below are still to run; with several slices all four come after the slices' sum.
class BackwardListener {
 public:
  virtual void layer_done(int layer) = 0;

 protected:
  ~BackwardListener() = default;
};

// Asked by Net::forward to write a batch's input samples [begin, end) (their images into the x
// forward was given, rows begin..end-1): called on the thread that runs that slice, just before
// the slice reads them, so reading a batch is spread over the net's threads with no barrier of
// its own.
class SliceInput {
 public:
  virtual void read(int begin, int end) = 0;

 protected:
  ~SliceInput() = default;
};

class Net {
 public:
  static constexpr size_t kNumParams = 21840;
  static constexpr int kNumTensors = 8;
  static constexpr int kNumLayers = 4;          // conv1, conv2, fc1, fc2: a weight and a bias each
  static const ParamView kParams[kNumTensors];  // conv1.weight ... fc2.bias, PyTorch order

  // Activation buffers sized for batches of up to max_batch samples (no allocation later);
  // threads: compute threads for one batch (>= 1; the caller's thread is one of them).
  explicit Net(int max_batch, int threads = 1);
  // The bytes Net(max_batch, threads) allocates (parameters, gradients, every slice's buffers):
  // what a batch size costs before anything is allocated.
  static uint64_t buffer_bytes(int max_batch, int threads);
  ~Net();
  Net(const Net&) = delete;
  Net& operator=(const Net&) = delete;
  int max_batch() const { return max_batch_; }
  int threads() const { return threads_; }

  // PyTorch's default init drawn from g as the example's Net() draws it after torch.manual_seed:
  // layer by layer (conv1, conv2, fc1, fc2), the weight by kaiming_uniform_(a=sqrt(5)), then the
  // bias by uniform_(-1/sqrt(fan_in), 1/sqrt(fan_in)); bit-identical to torch 1.13.
  void init(TorchGenerator* g);

  // Dropout masks for a batch of n as the example's forward draws them from g: Dropout2d's noise
  // (n,20,1,1) first, then F.dropout's (n,50); 0 or 1/(1-p).
  void sample_dropout_masks(TorchGenerator* g, int n, double p = 0.5);
  float* mask2d() { return mask2d_.data(); }  // (max_batch, 20): 0 or 1/(1-p)
  float* mask() { return mask_.data(); }      // (max_batch, 50)

  // x (n,1,28,28) -> log-probabilities (n,10). dropout: apply the current masks (training).
  // input (optional) fills x's samples first, slice by slice.
  const float* forward(const float* x, int n, bool dropout, SliceInput* input = nullptr);
  // Fills grads (overwritten) for mean nll over the n targets of the last forward; returns loss.
  // listener (optional) hears of each layer's gradients as they become final.
  float backward(const int32_t* target, int n, BackwardListener* listener = nullptr);

  // Runs fn(begin, end) on one range of the kNumParams parameters per thread (multiples of 16,
  // together all of them), on the net's threads: for elementwise work over the flat buffers
  // (the optimizer step), which then gives the same bits as one call over everything.
  template <class Fn>
  void for_each_param_range(Fn&& fn);

  std::vector<float> params;  // kNumParams
  std::vector<float> grads;   // kNumParams, same layout

 private:
  struct Slice;  // one thread's share of a batch: its activations and gradients
  template <class T>
  using Buffer = std::vector<T, CacheAligned<T>>;

  // Samples [begin, end) of a batch of n that slice s works on (whole 16-sample blocks).
  void slice_range(int s, int n, int* begin, int* end) const;
  // Runs fn(s, begin, end) on every slice s's samples [begin, end) of a batch of n, on the net's
  // threads; returns when all are done.
  template <class Fn>
  void for_each_slice(int n, Fn&& fn);
  // Whether slice 0 holds the whole batch of n (then everything runs on the calling thread).
  bool one_slice(int n) const;
  void run_slices(int n, void (*job)(Net*, int s, int begin, int end));
  // Parameters [begin, end) of thread part's share.
  void param_range(int part, size_t* begin, size_t* end) const;
  void sum_slice_gradients(int n);
  static void forward_job(Net* net, int s, int begin, int end);
  static void backward_job(Net* net, int s, int begin, int end);

  int max_batch_;
  int threads_ = 1;
  bool dropout_ = false;
  int n_ = 0;                                      // batch size of the last forward
  const float* x_ = nullptr;                       // its input
  SliceInput* input_ = nullptr;                    // what fills it, during forward
  const int32_t* target_ = nullptr;                // the targets of the running backward
  BackwardListener* in_slice_listener_ = nullptr;  // told by backward_job (one-slice batches only)
  Buffer<float> logp_;                             // (max_batch, 10), every slice writes its rows
  Buffer<float> mask2d_, mask_;
  std::vector<std::unique_ptr<Slice>> slices_;
  std::unique_ptr<ThreadTeam> team_;  // the threads of slices 0..threads-1 (none for one thread)
};

template <class Fn>
void Net::for_each_slice(int n, Fn&& fn) {
  int begin, end;
  if (one_slice(n)) {
    slice_range(0, n, &begin, &end);
    fn(0, begin, end);
    return;
  }
  team_->run(int(slices_.size()), [&](int s) {
    int b, e;
    slice_range(s, n, &b, &e);
    if (b < e) fn(s, b, e);
  });
}

template <class Fn>
void Net::for_each_param_range(Fn&& fn) {
  if (!team_) {
    fn(size_t(0), kNumParams);
    return;
  }
  team_->run(threads_, [&](int part) {
    size_t b, e;
    param_range(part, &b, &e);
    if (b < e) fn(b, e);
  });
}
