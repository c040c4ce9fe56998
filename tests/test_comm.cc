// test_comm: the communicator backends, rank discovery and Horovod's gradient semantics.
//   HalfConversion   IEEE binary16 bit patterns, rounding, subnormals, inf/NaN
//   RankEnv          the environment contract (launcher, Open MPI, Slurm, single) and its errors
//   AdasumCombine    the pairwise rule on hand-computed vectors
//   SingleBackend    the size-1 backend and the factory's errors
//   GlooThreads      W = 1..8 in-process Gloo ranks: closed forms, Adasum by hand, timeouts
//   GlooProcesses    tests/tool_comm_worker started as W processes through make_communicator
//   MpiProcesses     the same tool under mpirun (skipped only if mpirun is not installed)
#include <gtest/gtest.h>

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>
#include <sched.h>

#include <atomic>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "comm/comm_internal.h"
#include "comm/communicator.h"
#include "comm/gradient_averaging.h"
#include "comm/half_float.h"
#include "comm/rendezvous_files.h"
#include "comm/store_protocol.h"
#include "comm/store_server.h"
#include "tests/skip_policy.h"
#include "tests/comm_checks.h"
#include "tests/comm_test_util.h"
#include "tests/rank_env_checks.h"

using namespace std::chrono_literals;

namespace {

float bits_to_float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
uint32_t float_to_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

bool has(const std::string& s, const std::string& needle) { return s.find(needle) != std::string::npos; }

}  // namespace

// ---------------------------------------------------------------------------------------------
// Half precision

TEST(HalfConversion, KnownBitPatterns) {
  EXPECT_EQ(float_to_half(1.0f), 0x3C00);
  EXPECT_EQ(float_to_half(-2.0f), 0xC000);
  EXPECT_EQ(float_to_half(0.5f), 0x3800);
  EXPECT_EQ(float_to_half(0.1f), 0x2E66);
  EXPECT_EQ(float_to_half(65504.0f), 0x7BFF);  // largest finite half
  EXPECT_EQ(float_to_half(std::nextafter(65520.0f, 0.0f)), 0x7BFF);
  EXPECT_EQ(float_to_half(65520.0f), 0x7C00);  // halfway to 65536: rounds to even = inf
  EXPECT_EQ(float_to_half(-65520.0f), 0xFC00);
  EXPECT_EQ(float_to_half(1e10f), 0x7C00);
  EXPECT_EQ(float_to_half(0.0f), 0x0000);
  EXPECT_EQ(float_to_half(-0.0f), 0x8000);
  EXPECT_EQ(float_to_half(std::ldexp(1.0f, -14)), 0x0400);     // smallest normal
  EXPECT_EQ(float_to_half(std::ldexp(1023.0f, -24)), 0x03FF);  // largest subnormal
  EXPECT_EQ(float_to_half(std::ldexp(1.0f, -24)), 0x0001);     // smallest subnormal
  EXPECT_EQ(float_to_half(-std::ldexp(1.0f, -24)), 0x8001);
  EXPECT_EQ(float_to_half(std::numeric_limits<float>::infinity()), 0x7C00);
  EXPECT_EQ(float_to_half(-std::numeric_limits<float>::infinity()), 0xFC00);
  EXPECT_EQ(float_to_half(std::numeric_limits<float>::denorm_min()), 0x0000);
}

TEST(HalfConversion, RoundsHalfToEven) {
  // Normal range: 1 + 2^-11 is halfway between 0x3C00 and 0x3C01 -> even 0x3C00.
  EXPECT_EQ(float_to_half(1.0f + std::ldexp(1.0f, -11)), 0x3C00);
  EXPECT_EQ(float_to_half(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3C02);  // between 0x3C01 and 0x3C02 -> even
  EXPECT_EQ(float_to_half(1.0f + std::ldexp(1.0f, -11) + std::ldexp(1.0f, -20)), 0x3C01);  // just above half
  EXPECT_EQ(float_to_half(2049.0f), 0x6800);                                               // halfway 2048/2050 -> 2048
  EXPECT_EQ(float_to_half(2051.0f), 0x6802);                                               // halfway 2050/2052 -> 2052
  EXPECT_EQ(float_to_half(2050.0f), 0x6801);
  // Mantissa carry into the exponent: just below 2 rounds up to 2.0.
  EXPECT_EQ(float_to_half(std::nextafter(2.0f, 0.0f)), 0x4000);
  // Subnormal range.
  EXPECT_EQ(float_to_half(std::ldexp(1.0f, -25)), 0x0000);                        // halfway 0 / 2^-24 -> 0
  EXPECT_EQ(float_to_half(std::ldexp(1.5f, -25)), 0x0001);                        // 0.75 units -> 1
  EXPECT_EQ(float_to_half(std::ldexp(3.0f, -25)), 0x0002);                        // 1.5 units -> even 2
  EXPECT_EQ(float_to_half(std::ldexp(5.0f, -25)), 0x0002);                        // 2.5 units -> even 2
  EXPECT_EQ(float_to_half(std::nextafter(std::ldexp(1.0f, -25), 1.0f)), 0x0001);  // just above half a unit
  EXPECT_EQ(float_to_half(std::ldexp(2047.0f, -25)), 0x0400);  // 1023.5 units -> 1024 = smallest normal
}

TEST(HalfConversion, InfinityAndNan) {
  float nan = std::numeric_limits<float>::quiet_NaN();
  half_bits h = float_to_half(nan);
  EXPECT_EQ(h & 0x7C00, 0x7C00);
  EXPECT_NE(h & 0x03FF, 0);
  EXPECT_TRUE(std::isnan(half_to_float(h)));
  // A signalling NaN whose payload sits only in the low bits still converts to a (quiet) NaN.
  half_bits s = float_to_half(bits_to_float(0x7F800001u));
  EXPECT_EQ(s & 0x7E00, 0x7E00);
  EXPECT_EQ(float_to_half(bits_to_float(0xFFC00000u)) & 0x8000, 0x8000);  // sign kept
  EXPECT_TRUE(std::isnan(half_to_float(0x7C01)));
  EXPECT_TRUE(std::isnan(half_to_float(0xFE00)));
  EXPECT_EQ(half_to_float(0x7C00), std::numeric_limits<float>::infinity());
  EXPECT_EQ(half_to_float(0xFC00), -std::numeric_limits<float>::infinity());
}

TEST(HalfConversion, HalfToFloatValues) {
  EXPECT_EQ(half_to_float(0x3C00), 1.0f);
  EXPECT_EQ(half_to_float(0x7BFF), 65504.0f);
  EXPECT_EQ(half_to_float(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(half_to_float(0x03FF), std::ldexp(1023.0f, -24));
  EXPECT_EQ(half_to_float(0x0400), std::ldexp(1.0f, -14));
  EXPECT_EQ(half_to_float(0x3555), 0.333251953125f);
  EXPECT_EQ(float_to_bits(half_to_float(0x8000)), 0x80000000u);
  EXPECT_EQ(half_to_float(0xC000), -2.0f);
}

TEST(HalfConversion, EveryHalfRoundTrips) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    float f = half_to_float(static_cast<half_bits>(h));
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(half_to_float(float_to_half(f)))) << h;
      continue;
    }
    ASSERT_EQ(float_to_half(f), h) << "half 0x" << std::hex << h;
  }
}

// Cross-check against the compiler's own conversion over a sweep of float bit patterns.
TEST(HalfConversion, MatchesCompilerFloat16) {
#ifdef __FLT16_MAX__
  size_t checked = 0;
  for (uint64_t u = 0; u <= 0xFFFFFFFFull; u += 65537) {
    float f = bits_to_float(static_cast<uint32_t>(u));
    if (std::isnan(f)) continue;
    _Float16 ref = static_cast<_Float16>(f);
    uint16_t rb;
    std::memcpy(&rb, &ref, 2);
    ASSERT_EQ(float_to_half(f), rb) << "float bits 0x" << std::hex << u;
    ++checked;
  }
  // Dense sweep around the subnormal/normal boundary and the overflow threshold.
  for (uint32_t u = 0x33000000u - 4096; u < 0x38800000u + 65536; u += 7) {
    _Float16 ref = static_cast<_Float16>(bits_to_float(u));
    uint16_t rb;
    std::memcpy(&rb, &ref, 2);
    ASSERT_EQ(float_to_half(bits_to_float(u)), rb) << std::hex << u;
  }
  for (uint32_t u = 0x477FE000u - 100; u < 0x47800000u + 100; ++u) {
    _Float16 ref = static_cast<_Float16>(bits_to_float(u));
    uint16_t rb;
    std::memcpy(&rb, &ref, 2);
    ASSERT_EQ(float_to_half(bits_to_float(u)), rb) << std::hex << u;
  }
  EXPECT_GT(checked, 60000u);
#else
  BARESGD_SKIP("compiler has no _Float16");
#endif
}

// ---------------------------------------------------------------------------------------------
// Rank discovery

namespace {

using rank_env_checks::EnvMap;
using rank_env_checks::discover;
using rank_env_checks::discover_error;

EnvMap launcher_env() {
  return {{"BARESGD_RANK", "3"},
          {"BARESGD_SIZE", "4"},
          {"BARESGD_LOCAL_RANK", "1"},
          {"BARESGD_LOCAL_SIZE", "2"},
          {"BARESGD_CROSS_RANK", "1"},
          {"BARESGD_CROSS_SIZE", "2"},
          {"BARESGD_COMM", "gloo"},
          {"BARESGD_HOSTNAME", "hpc03"},
          {"BARESGD_HOST_ADDR", "127.0.0.3"},
          {"BARESGD_STORE_ADDR", "127.0.0.1:29500"},
          {"BARESGD_SECRET", "s3cret"},
          {"BARESGD_JOB_ID", "job7"}};
}

}  // namespace

TEST(RankEnv, LauncherVariables) {
  RankInfo r = discover(launcher_env());
  EXPECT_EQ(r.source, "launch");
  EXPECT_EQ(r.backend, "gloo");
  EXPECT_EQ(r.rank, 3);
  EXPECT_EQ(r.size, 4);
  EXPECT_EQ(r.local_rank, 1);
  EXPECT_EQ(r.local_size, 2);
  EXPECT_EQ(r.cross_rank, 1);
  EXPECT_EQ(r.cross_size, 2);
  EXPECT_EQ(r.hostname, "hpc03");
  EXPECT_EQ(r.host_addr, "127.0.0.3");
  EXPECT_EQ(r.store_addr, "127.0.0.1:29500");
  EXPECT_EQ(r.secret, "s3cret");
  EXPECT_EQ(r.job_id, "job7");
}

TEST(RankEnv, LauncherDefaults) {
  // Only rank and size: one host, gloo, cross 0/1.
  RankInfo r = discover({{"BARESGD_RANK", "2"}, {"BARESGD_SIZE", "3"}});
  EXPECT_EQ(r.backend, "gloo");
  EXPECT_EQ(r.local_rank, 2);
  EXPECT_EQ(r.local_size, 3);
  EXPECT_EQ(r.cross_rank, 0);
  EXPECT_EQ(r.cross_size, 1);
  EXPECT_FALSE(r.hostname.empty());
  // Local given, cross not: computed after connecting (-1 until then).
  RankInfo c = discover(
      {{"BARESGD_RANK", "2"}, {"BARESGD_SIZE", "4"}, {"BARESGD_LOCAL_RANK", "0"}, {"BARESGD_LOCAL_SIZE", "2"}});
  EXPECT_EQ(c.cross_rank, -1);
  EXPECT_EQ(c.cross_size, -1);
  // Launcher wins over Open MPI and Slurm variables.
  EnvMap both = launcher_env();
  both["OMPI_COMM_WORLD_RANK"] = "0";
  both["SLURM_PROCID"] = "0";
  EXPECT_EQ(discover(both).source, "launch");
  EnvMap mpi = launcher_env();
  mpi["BARESGD_COMM"] = "mpi";
  EXPECT_EQ(discover(mpi).backend, "mpi");
}

TEST(RankEnv, LauncherErrorsNameVariableAndValue) {
  auto with = [](const char* k, const char* v) {
    EnvMap e = launcher_env();
    e[k] = v;
    return discover_error(e);
  };
  auto without = [](const char* k) {
    EnvMap e = launcher_env();
    e.erase(k);
    return discover_error(e);
  };
  EXPECT_TRUE(has(with("BARESGD_RANK", "3x"), "BARESGD_RANK='3x' is not an integer"));
  EXPECT_TRUE(has(with("BARESGD_RANK", ""), "BARESGD_RANK='' is not an integer"));
  EXPECT_TRUE(has(with("BARESGD_RANK", " 3"), "BARESGD_RANK=' 3' is not an integer"));
  EXPECT_TRUE(has(with("BARESGD_RANK", "+3"), "BARESGD_RANK='+3' is not an integer"));
  EXPECT_TRUE(has(with("BARESGD_RANK", "4"), "BARESGD_RANK=4 is out of range"));
  EXPECT_TRUE(has(with("BARESGD_RANK", "-1"), "BARESGD_RANK=-1 is out of range"));
  EXPECT_TRUE(has(with("BARESGD_SIZE", "0"), "BARESGD_SIZE=0 must be >= 1"));
  EXPECT_TRUE(has(with("BARESGD_SIZE", "99999999999"), "BARESGD_SIZE='99999999999' is out of range"));
  EXPECT_TRUE(has(with("BARESGD_LOCAL_RANK", "2"), "BARESGD_LOCAL_RANK=2 is out of range"));
  EXPECT_TRUE(has(with("BARESGD_LOCAL_SIZE", "5"), "BARESGD_LOCAL_SIZE=5 is larger than BARESGD_SIZE=4"));
  EXPECT_TRUE(has(with("BARESGD_CROSS_RANK", "x"), "BARESGD_CROSS_RANK='x'"));
  EXPECT_TRUE(has(with("BARESGD_COMM", "nccl"), "BARESGD_COMM='nccl' is not one of gloo, mpi"));
  EXPECT_TRUE(has(with("BARESGD_STORE_ADDR", "127.0.0.1"), "BARESGD_STORE_ADDR='127.0.0.1' is not host:port"));
  EXPECT_TRUE(has(with("BARESGD_STORE_ADDR", "h:70000"), "BARESGD_STORE_ADDR='h:70000'"));
  EXPECT_TRUE(has(with("BARESGD_JOB_ID", ""), "BARESGD_JOB_ID is set but empty"));
  EXPECT_TRUE(has(without("BARESGD_SIZE"), "BARESGD_RANK is set but BARESGD_SIZE is not"));
  EXPECT_TRUE(has(without("BARESGD_LOCAL_SIZE"), "BARESGD_LOCAL_RANK is set but BARESGD_LOCAL_SIZE is not"));
  EXPECT_TRUE(has(without("BARESGD_CROSS_RANK"), "BARESGD_CROSS_SIZE is set but BARESGD_CROSS_RANK is not"));
  EXPECT_TRUE(has(discover_error({{"BARESGD_RANK", "1"}, {"BARESGD_SIZE", "2"}, {"BARESGD_COMM", "single"}}),
                  "BARESGD_COMM=single but"));
}

TEST(RankEnv, OpenMpi) {
  RankInfo r = discover({{"OMPI_COMM_WORLD_RANK", "3"},
                         {"OMPI_COMM_WORLD_SIZE", "4"},
                         {"OMPI_COMM_WORLD_LOCAL_RANK", "1"},
                         {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"}});
  EXPECT_EQ(r.source, "ompi");
  EXPECT_EQ(r.backend, "mpi");
  EXPECT_EQ(r.rank, 3);
  EXPECT_EQ(r.size, 4);
  EXPECT_EQ(r.local_rank, 1);
  EXPECT_EQ(r.local_size, 2);
  EXPECT_EQ(r.cross_rank, -1);  // after MPI init
  RankInfo one_host = discover({{"OMPI_COMM_WORLD_RANK", "1"},
                                {"OMPI_COMM_WORLD_SIZE", "2"},
                                {"OMPI_COMM_WORLD_LOCAL_RANK", "1"},
                                {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"},
                                {"BARESGD_COMM", "gloo"}});
  EXPECT_EQ(one_host.cross_rank, 0);
  EXPECT_EQ(one_host.cross_size, 1);
  EXPECT_EQ(one_host.backend, "gloo");
  EXPECT_TRUE(has(discover_error({{"OMPI_COMM_WORLD_RANK", "2"},
                                  {"OMPI_COMM_WORLD_SIZE", "2"},
                                  {"OMPI_COMM_WORLD_LOCAL_RANK", "0"},
                                  {"OMPI_COMM_WORLD_LOCAL_SIZE", "1"}}),
                  "OMPI_COMM_WORLD_RANK=2 is out of range"));
  EXPECT_TRUE(has(discover_error({{"OMPI_COMM_WORLD_RANK", "0"}, {"OMPI_COMM_WORLD_SIZE", "2"}}),
                  "OMPI_COMM_WORLD_LOCAL_RANK"));
}

TEST(RankEnv, Slurm) {
  EnvMap env = {{"SLURM_PROCID", "4"},  {"SLURM_NTASKS", "5"},  {"SLURM_LOCALID", "0"},
                {"SLURM_NNODES", "3"},  {"SLURM_NODEID", "2"},  {"SLURM_TASKS_PER_NODE", "2(x2),1"},
                {"SLURM_JOB_ID", "77"}, {"SLURM_STEP_ID", "0"}, {"SLURMD_NODENAME", "node9"}};
  RankInfo r = discover(env);
  EXPECT_EQ(r.source, "slurm");
  EXPECT_EQ(r.rank, 4);
  EXPECT_EQ(r.size, 5);
  EXPECT_EQ(r.local_rank, 0);
  EXPECT_EQ(r.local_size, 1);
  EXPECT_EQ(r.cross_rank, 2);  // third node holding a local rank 0
  EXPECT_EQ(r.cross_size, 3);
  EXPECT_EQ(r.job_id, "slurm-77.0");
  EXPECT_EQ(r.hostname, "node9");
  EXPECT_EQ(r.backend, "gloo");  // no PMI in the environment
  env["SLURM_PROCID"] = "1";
  env["SLURM_LOCALID"] = "1";
  env["SLURM_NODEID"] = "0";
  RankInfo r1 = discover(env);
  EXPECT_EQ(r1.local_size, 2);
  EXPECT_EQ(r1.cross_rank, 0);
  EXPECT_EQ(r1.cross_size, 2);  // only two nodes have a local rank 1
  env["PMIX_RANK"] = "1";
#if BARESGD_HAVE_MPI
  EXPECT_EQ(discover(env).backend, "mpi");
#else
  EXPECT_EQ(discover(env).backend, "gloo");
#endif
  env["SLURM_NODEID"] = "3";
  EXPECT_TRUE(has(discover_error(env), "SLURM_NODEID=3 is out of range"));
  // No per-node counts: even split.
  RankInfo even = discover({{"SLURM_PROCID", "3"},
                            {"SLURM_NTASKS", "4"},
                            {"SLURM_LOCALID", "1"},
                            {"SLURM_NNODES", "2"},
                            {"SLURM_NODEID", "1"},
                            {"SLURM_STEPID", "3"}});
  EXPECT_EQ(even.local_size, 2);
  EXPECT_EQ(even.cross_rank, 1);
  EXPECT_EQ(even.cross_size, 2);
}

// An sbatch script: SLURM_PROCID=0, SLURM_LOCALID=0 and the allocation's SLURM_NTASKS, but no
// srun step (slurmstepd sets no SLURM_STEP_ID for the batch step; releases that print it show
// 0xfffffffb, or 0xfffffffe before Slurm 20.11, as a negative or a >= 0xfffffff0 number).
TEST(RankEnv, SlurmBatchStepIsASingleProcess) {
  const EnvMap batch = {{"SLURM_PROCID", "0"},
                        {"SLURM_NTASKS", "4"},
                        {"SLURM_LOCALID", "0"},
                        {"SLURM_NODEID", "0"},
                        {"SLURM_NNODES", "2"},
                        {"SLURM_JOB_ID", "1234"},
                        {"SLURM_TASKS_PER_NODE", "2(x2)"},
                        {"SLURM_JOB_NODELIST", "hpc[01-02]"}};
  RankInfo r = discover(batch);
  EXPECT_EQ(r.source, "slurm-batch");
  EXPECT_EQ(r.backend, "single");
  EXPECT_EQ(r.rank, 0);
  EXPECT_EQ(r.size, 1);
  EXPECT_EQ(r.local_size, 1);
  EXPECT_EQ(r.cross_size, 1);
  EXPECT_EQ(r.notice,
            "SLURM_PROCID=0 is from the batch step of Slurm job 1234 (no SLURM_STEP_ID), not from srun: running as a "
            "single process (world size 1), not as rank 0 of SLURM_NTASKS=4; start the ranks with srun or ./launch");
  for (const char* id : {"4294967291", "4294967294", "4294967290", "-5", "-2", "batch", "extern", "interactive"}) {
    EnvMap e = batch;
    e["SLURM_STEP_ID"] = id;
    RankInfo b = discover(e);
    EXPECT_EQ(b.source, "slurm-batch") << id;
    EXPECT_EQ(b.size, 1) << id;
    EXPECT_TRUE(has(b.notice, std::string("(SLURM_STEP_ID=") + id + "), not from srun")) << b.notice;
  }
  EnvMap old = batch;
  old["SLURM_STEPID"] = "4294967294";
  EXPECT_TRUE(has(discover(old).notice, "(SLURM_STEPID=4294967294)")) << discover(old).notice;
  // An srun task of the same job: rank 0 of 4.
  for (const char* id : {"0", "7", "4294967279"}) {
    EnvMap task = batch;
    task["SLURM_STEP_ID"] = id;
    RankInfo t = discover(task);
    EXPECT_EQ(t.source, "slurm") << id;
    EXPECT_EQ(t.size, 4) << id;
    EXPECT_EQ(t.notice, "") << id;
  }
  // One task, or none given (sbatch -N2 without -n): a single process, nothing to say.
  EnvMap one = batch;
  one["SLURM_NTASKS"] = "1";
  EXPECT_EQ(discover(one).notice, "");
  EnvMap none = batch;
  none.erase("SLURM_NTASKS");
  EXPECT_EQ(discover(none).size, 1);
  EXPECT_EQ(discover(none).notice, "");
  EnvMap bad = batch;
  bad["SLURM_STEP_ID"] = "zero";
  EXPECT_TRUE(has(discover_error(bad), "SLURM_STEP_ID='zero' is not a step id"));
  bad["SLURM_STEP_ID"] = "";
  EXPECT_TRUE(has(discover_error(bad), "SLURM_STEP_ID='' is not a step id"));
  // The launcher's and mpirun's variables still win inside a batch step.
  EnvMap launched = batch;
  launched["BARESGD_RANK"] = "1";
  launched["BARESGD_SIZE"] = "2";
  EXPECT_EQ(discover(launched).source, "launch");
  EXPECT_EQ(discover(launched).notice, "");
}

TEST(RankEnv, SingleProcess) {
  RankInfo r = discover({});
  EXPECT_EQ(r.source, "none");
  EXPECT_EQ(r.backend, "single");
  EXPECT_EQ(r.rank, 0);
  EXPECT_EQ(r.size, 1);
  EXPECT_EQ(r.cross_size, 1);
}

// ---------------------------------------------------------------------------------------------
// Adasum rule

TEST(AdasumCombine, HandComputed) {
  // a=(1,2), b=(3,4): a.b=11, |a|^2=5, |b|^2=25 -> (1-11/10) a + (1-11/50) b = -0.1 a + 0.78 b.
  float a[] = {1, 2}, b[] = {3, 4}, out[2];
  adasum_combine(out, a, b, {{0, 2}});
  EXPECT_NEAR(out[0], 2.24f, 1e-6);
  EXPECT_NEAR(out[1], 2.92f, 1e-6);
}

TEST(AdasumCombine, OrthogonalIsSumIdenticalIsVector) {
  float a[] = {1, 0, 0}, b[] = {0, 2, 0}, out[3];
  adasum_combine(out, a, b, {{0, 3}});
  EXPECT_EQ(out[0], 1.0f);
  EXPECT_EQ(out[1], 2.0f);
  EXPECT_EQ(out[2], 0.0f);
  float c[] = {3, -4, 0.5f};
  adasum_combine(out, c, c, {{0, 3}});
  for (int i = 0; i < 3; ++i) EXPECT_FLOAT_EQ(out[i], c[i]);
}

TEST(AdasumCombine, ZeroNormGivesTheOtherVector) {
  float z[] = {0, 0, 0}, b[] = {1, -2, 3}, out[3];
  adasum_combine(out, z, b, {{0, 3}});
  for (int i = 0; i < 3; ++i) EXPECT_EQ(out[i], b[i]);
  adasum_combine(out, b, z, {{0, 3}});
  for (int i = 0; i < 3; ++i) EXPECT_EQ(out[i], b[i]);
  adasum_combine(out, z, z, {{0, 3}});
  for (int i = 0; i < 3; ++i) EXPECT_EQ(out[i], 0.0f);
}

TEST(AdasumCombine, PerSegment) {
  // Segment 0 as HandComputed, segment 1 orthogonal: the rule applies per segment, not globally.
  float a[] = {1, 2, 1, 0}, b[] = {3, 4, 0, 5}, out[4];
  adasum_combine(out, a, b, {{0, 2}, {2, 2}});
  EXPECT_NEAR(out[0], 2.24f, 1e-6);
  EXPECT_NEAR(out[1], 2.92f, 1e-6);
  EXPECT_EQ(out[2], 1.0f);
  EXPECT_EQ(out[3], 5.0f);
  // One segment over everything gives something else.
  adasum_combine(out, a, b, {{0, 4}});
  EXPECT_GT(std::fabs(out[2] - 1.0f), 1e-3);
}

// ---------------------------------------------------------------------------------------------
// Single-process backend and the factory

TEST(SingleBackend, CollectivesAreIdentity) {
  CommOptions opts;
  opts.backend = "single";
  auto comm = make_communicator(opts);
  EXPECT_STREQ(comm->backend_name(), "single");
  EXPECT_EQ(comm->size(), 1);
  EXPECT_EQ(comm->rank(), 0);
  commcheck::Checker c{*comm, {}};
  c.run_all(false);
  for (const auto& f : c.failures) ADD_FAILURE() << f;
  float g[] = {1.0f, -3.0f};
  GradientAveraging how;
  how.predivide_factor = 2.5f;
  average_gradients(*comm, g, 2, {}, how);
  EXPECT_FLOAT_EQ(g[0], 1.0f);
  EXPECT_FLOAT_EQ(g[1], -3.0f);
  EXPECT_THROW(comm->broadcast(g, 4, 1), std::invalid_argument);
  EXPECT_THROW(comm->sendrecv(g, g, 4, 1), std::invalid_argument);
}

TEST(SingleBackend, FactoryErrors) {
  CommOptions opts;
  opts.backend = "nccl";
  try {
    make_communicator(opts);
    ADD_FAILURE() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_TRUE(has(e.what(), "unknown communication backend 'nccl'")) << e.what();
  }
}

TEST(SingleBackend, BackendsMissingFromTheBuildAreExplained) {
  auto error_for = [](const char* backend) {
    CommOptions opts;
    opts.backend = backend;
    try {
      make_communicator(opts);
    } catch (const std::runtime_error& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  (void)error_for;
#if !BARESGD_HAVE_MPI
  EXPECT_TRUE(has(error_for("mpi"),
                  "this ./train was built without MPI (libopenmpi-dev missing); rebuild with "
                  "libopenmpi-dev installed, or run over Gloo: --num-proc N --communication gloo"));
#endif
#if !BARESGD_HAVE_GLOO
  EXPECT_TRUE(has(error_for("gloo"), "this ./train was built without Gloo (libgloo-dev missing)"));
#endif
#if BARESGD_HAVE_MPI && BARESGD_HAVE_GLOO
  BARESGD_SKIP("both backends are built in");
#endif
}

TEST(SingleBackend, AverageGradientsArgumentErrors) {
  CommOptions opts;
  opts.backend = "single";
  auto comm = make_communicator(opts);
  float g[4] = {1, 2, 3, 4};
  GradientAveraging bad;
  bad.predivide_factor = 0;
  EXPECT_THROW(average_gradients(*comm, g, 4, {}, bad), std::invalid_argument);
  GradientAveraging ada;
  ada.adasum = true;
  ada.predivide_factor = 2;
  EXPECT_THROW(average_gradients(*comm, g, 4, {}, ada), std::invalid_argument);  // Horovod: Average only
  ada.predivide_factor = 1;
  EXPECT_THROW(average_gradients(*comm, g, 4, {{0, 3}}, ada), std::invalid_argument);  // segments short
  EXPECT_THROW(average_gradients(*comm, g, 4, {{1, 3}}, ada), std::invalid_argument);  // gap at the front
  EXPECT_NO_THROW(average_gradients(*comm, g, 4, {{0, 1}, {1, 3}}, ada));
  EXPECT_EQ(g[3], 4.0f);  // Adasum of one rank is the identity
}

// ---------------------------------------------------------------------------------------------
// Gloo, in-process ranks

#if BARESGD_HAVE_GLOO

namespace {

void expect_no_errors(const commtest::ThreadResult& r) {
  for (size_t k = 0; k < r.errors.size(); ++k) EXPECT_EQ(r.errors[k], "") << "thread " << k;
}

// Runs the scripted checks on W threads; returns the failures of all ranks.
void gloo_closed_forms(int w, bool big) {
  std::mutex mu;
  std::vector<std::string> failures;
  CommOptions opts;
  opts.start_timeout = 20s;
  opts.comm_timeout = 60s;
  auto res = commtest::run_gloo_threads(
      w,
      [&](Communicator& comm) {
        EXPECT_STREQ(comm.backend_name(), "gloo");
        commcheck::Checker c{comm, {}};
        c.run_all(big);
        std::lock_guard<std::mutex> lock(mu);
        failures.insert(failures.end(), c.failures.begin(), c.failures.end());
      },
      opts);
  expect_no_errors(res);
  for (const auto& f : failures) ADD_FAILURE() << "world " << w << ": " << f;
}

}  // namespace

TEST(GlooThreads, ClosedFormsWorlds1to4) {
  for (int w = 1; w <= 4; ++w) gloo_closed_forms(w, /*big=*/true);
}

TEST(GlooThreads, ClosedFormsWorlds5to8) {
  for (int w = 5; w <= 8; ++w) gloo_closed_forms(w, /*big=*/w == 8);
}

// The gradient channel: the first allreduce of >= 4 KB binds its size and pre-posts the next
// round's receives; other sizes, types and collectives in between must not disturb it.
TEST(GlooThreads, GradientChannelAcrossRoundsAndOtherCollectives) {
  for (int w : {2, 3}) {
    std::mutex mu;
    std::vector<std::string> failures;
    auto fail = [&](const std::string& f) {
      std::lock_guard<std::mutex> lock(mu);
      failures.push_back(f);
    };
    auto res = commtest::run_gloo_threads(
        w,
        [&](Communicator& comm) {
          const int r = comm.rank();
          const size_t n = 3000, other = 5000;  // 12 KB binds the channel; 20 KB stays per-call
          for (int round = 0; round < 6; ++round) {
            std::vector<float> g(n), h(other);
            for (size_t i = 0; i < n; ++i) g[i] = float(r + round + int(i % 7));
            for (size_t i = 0; i < other; ++i) h[i] = float(2 * r + int(i % 3));
            comm.allreduce_sum(g.data(), n);
            if (round % 2) comm.allreduce_sum(h.data(), other);
            double stats[2] = {double(r), 1.0};
            comm.allreduce_sum(stats, 2);
            std::vector<half_bits> f16(n, 0x3C00);  // 1.0, a 6 KB allreduce of another type
            comm.allreduce_sum_f16(f16.data(), n);
            int token = r == 0 ? 100 + round : -1;
            comm.broadcast(&token, sizeof token, 0);
            const int ranks_sum = w * (w - 1) / 2;
            for (size_t i = 0; i < n; ++i)
              if (g[i] != float(ranks_sum + w * (round + int(i % 7)))) {
                fail("round " + std::to_string(round) + " g[" + std::to_string(i) + "]=" + std::to_string(g[i]));
                break;
              }
            if (round % 2)
              for (size_t i = 0; i < other; ++i)
                if (h[i] != float(2 * ranks_sum + w * int(i % 3))) {
                  fail("round " + std::to_string(round) + " h[" + std::to_string(i) + "]");
                  break;
                }
            if (stats[0] != ranks_sum || stats[1] != w) fail("round " + std::to_string(round) + " stats");
            if (f16[0] != float_to_half(float(w)) || f16[n - 1] != f16[0])
              fail("round " + std::to_string(round) + " f16");
            if (token != 100 + round) fail("round " + std::to_string(round) + " broadcast");
          }
        },
        CommOptions());
    expect_no_errors(res);
    for (const auto& f : failures) ADD_FAILURE() << "world " << w << ": " << f;
  }
}

// Gloo's device thread (one per communicator) runs in SCHED_IDLE unless BARESGD_GLOO_IDLE_DEVICE=0.
int idle_threads_of_this_process() {
  int n = 0;
  if (DIR* d = opendir("/proc/self/task")) {
    while (struct dirent* e = readdir(d))
      if (e->d_name[0] != '.' && sched_getscheduler(static_cast<pid_t>(std::atol(e->d_name))) == SCHED_IDLE) ++n;
    closedir(d);
  }
  return n;
}

TEST(GlooThreads, DeviceThreadRunsInSchedIdle) {
  for (const char* setting : {"", "0"}) {
    if (*setting)
      setenv("BARESGD_GLOO_IDLE_DEVICE", setting, 1);
    else
      unsetenv("BARESGD_GLOO_IDLE_DEVICE");
    std::atomic<int> seen{-1};
    auto res = commtest::run_gloo_threads(
        2,
        [&](Communicator& comm) {
          comm.barrier();  // both communicators (and their devices) exist
          if (comm.rank() == 0) seen = idle_threads_of_this_process();
          comm.barrier();
        },
        CommOptions());
    unsetenv("BARESGD_GLOO_IDLE_DEVICE");
    expect_no_errors(res);
    if (*setting)
      EXPECT_EQ(seen.load(), 0) << "BARESGD_GLOO_IDLE_DEVICE=0 leaves the device threads alone";
    else
      EXPECT_GE(seen.load(), 2) << "one idle device thread per communicator";
  }
}

// Runs Adasum over in.size() Gloo ranks (rank r contributes in[r]) with segments {0,2} and {2,3}
// and checks every rank ends with `want`.
void expect_adasum(const std::vector<std::vector<float>>& in, const std::vector<float>& want) {
  const int w = static_cast<int>(in.size());
  std::vector<std::vector<float>> out(in.size());
  auto res = commtest::run_gloo_threads(
      w,
      [&](Communicator& comm) {
        std::vector<float> g = in[comm.rank()];
        GradientAveraging how;
        how.adasum = true;
        average_gradients(comm, g.data(), g.size(), {{0, 2}, {2, 3}}, how);
        out[comm.rank()] = g;
      },
      CommOptions());
  expect_no_errors(res);
  for (int r = 0; r < w; ++r) {
    ASSERT_EQ(out[r].size(), want.size());
    for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(out[r][i], want[i], 1e-6) << "rank " << r << " element " << i;
  }
}

TEST(GlooThreads, AdasumTwoRanksByHand) {
  // Segment 0: (1,2) and (3,4) -> -0.1 a + 0.78 b = (2.24, 2.92).
  // Segment 1 (3 elements, odd): (1,0,0) and (0,2,0) orthogonal -> their sum (1,2,0).
  expect_adasum({{1, 2, 1, 0, 0}, {3, 4, 0, 2, 0}}, {2.24f, 2.92f, 1, 2, 0});
}

TEST(GlooThreads, AdasumFourRanksByHand) {
  // Recursive rule: level 1 combines ranks (0,1) and (2,3), level 2 combines the two results.
  // Segment 0 (2 elements): v0=(1,0), v1=(0,1) orthogonal -> A=(1,1); v2=v3=(2,0) -> B=(2,0);
  //   A.B=2, |A|^2=2, |B|^2=4 -> (1-2/4) A + (1-2/8) B = 0.5 (1,1) + 0.75 (2,0) = (2, 0.5).
  //   (Pairing (0,2),(1,3) first would give (1.9, 0.7): the test pins the pairing order.)
  // Segment 1 (3 elements): v0=v1=(1,1,1) -> A=(1,1,1); v2=0, v3=(0,0,3) -> zero norm: B=(0,0,3);
  //   A.B=3, |A|^2=3, |B|^2=9 -> 0.5 A + (5/6) B = (0.5, 0.5, 3).
  expect_adasum({{1, 0, 1, 1, 1}, {0, 1, 1, 1, 1}, {2, 0, 0, 0, 0}, {2, 0, 0, 0, 3}}, {2, 0.5f, 0.5f, 0.5f, 3});
}

TEST(GlooThreads, AdasumIdenticalAndOrthogonalVectors) {
  const int w = 8;
  const size_t n = 37;
  std::vector<std::vector<float>> same(w), orth(w);
  auto res = commtest::run_gloo_threads(
      w,
      [&](Communicator& comm) {
        const int r = comm.rank();
        GradientAveraging how;
        how.adasum = true;
        std::vector<float> g(n);
        for (size_t i = 0; i < n; ++i) g[i] = 0.25f * static_cast<float>(i) - 3;
        average_gradients(comm, g.data(), n, {{0, 10}, {10, 27}}, how);
        same[r] = g;
        std::vector<float> e(n, 0.0f);
        e[r * 4] = static_cast<float>(r + 1);  // distinct basis directions: pairwise orthogonal
        average_gradients(comm, e.data(), n, {}, how);
        orth[r] = e;
      },
      CommOptions());
  expect_no_errors(res);
  for (int r = 0; r < w; ++r) {
    for (size_t i = 0; i < n; ++i) {
      EXPECT_NEAR(same[r][i], 0.25f * static_cast<float>(i) - 3, 1e-5) << r << " " << i;
      float want = (i % 4 == 0 && i / 4 < static_cast<size_t>(w)) ? static_cast<float>(i / 4 + 1) : 0.0f;
      EXPECT_EQ(orth[r][i], want) << r << " " << i;
    }
  }
}

TEST(GlooThreads, CommTimeoutNamesOperationAndPeer) {
  // Rank 2 stops responding until ranks 0 and 1 have given up on it; they must name it, and not
  // before the timeout.
  CommOptions opts;
  opts.comm_timeout = 700ms;
  std::string errors[2], second[2];
  double took[2] = {0, 0};
  std::atomic<int> done_waiting{0};
  auto res = commtest::run_gloo_threads(
      3,
      [&](Communicator& comm) {
        std::vector<float> v(1000, 1.0f);
        const int r = comm.rank();
        if (r == 2) {
          const auto deadline = std::chrono::steady_clock::now() + 120s;
          while (done_waiting.load() < 2 && std::chrono::steady_clock::now() < deadline)
            std::this_thread::sleep_for(5ms);
          try {
            comm.allreduce_sum(v.data(), v.size());
          } catch (const std::exception&) {}
          return;
        }
        auto t0 = std::chrono::steady_clock::now();
        try {
          comm.allreduce_sum(v.data(), v.size());
        } catch (const std::runtime_error& e) {
          errors[r] = e.what();
        }
        took[r] = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        ++done_waiting;
        try {
          comm.barrier();
        } catch (const std::runtime_error& e) {
          second[r] = e.what();
        }
      },
      opts);
  expect_no_errors(res);
  for (int r = 0; r < 2; ++r) {
    EXPECT_TRUE(has(errors[r], "rank " + std::to_string(r) +
                                   " (host localhost): gloo allreduce timed out after 0.7 s "
                                   "waiting for rank 2 (a peer stopped responding)"))
        << errors[r];
    EXPECT_EQ(errors[r].find('\n'), std::string::npos) << errors[r];
    EXPECT_GE(took[r], 0.7) << "timed out before --comm-timeout";
    EXPECT_TRUE(has(second[r], "refused: the communicator failed earlier")) << second[r];
    std::cerr << "[ timing ] rank " << r << " timed out after " << took[r] << " s (timeout 0.7 s)\n";
  }
}

TEST(GlooThreads, PeerExitIsReportedQuickly) {
  CommOptions opts;
  opts.comm_timeout = 30s;
  std::string error0;
  double took = 0;
  auto res = commtest::run_gloo_threads(
      2,
      [&](Communicator& comm) {
        comm.barrier();
        if (comm.rank() == 1) return;  // rank 1 goes away: its communicator closes its sockets
        std::vector<float> v(1000, 1.0f);
        auto t0 = std::chrono::steady_clock::now();
        try {
          comm.allreduce_sum(v.data(), v.size());
        } catch (const std::runtime_error& e) {
          error0 = e.what();
        }
        took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      },
      opts);
  expect_no_errors(res);
  EXPECT_TRUE(has(error0, "rank 0")) << error0;
  // The message says the connection was lost: the 30 s timeout played no part.
  EXPECT_TRUE(has(error0, "gloo allreduce lost the connection to rank 1 (did a rank exit?)")) << error0;
  std::cerr << "[ timing ] a peer's exit reported after " << took << " s (timeout 30 s)\n";
}

TEST(GlooThreads, MissingRankTimesOutNamingIt) {
  CommOptions opts;
  opts.start_timeout = 1000ms;
  auto t0 = std::chrono::steady_clock::now();
  auto res = commtest::run_gloo_threads(3, [](Communicator&) {}, opts, /*ranks=*/{0, 2});
  double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_EQ(res.errors.size(), 2u);
  for (const auto& e : res.errors) {
    EXPECT_TRUE(has(e, "gloo rendezvous timed out after 1 s: rank 1 never registered (2 of 3 ranks arrived")) << e;
  }
  EXPECT_TRUE(has(res.errors[0], "rank 0")) << res.errors[0];
  EXPECT_GE(took, 1.0) << "gave up before --start-timeout";
  std::cerr << "[ timing ] rendezvous with a missing rank gave up after " << took << " s (timeout 1 s)\n";
}

TEST(GlooThreads, WorldSizeMismatchIsReported) {
  CommOptions opts;
  opts.start_timeout = 1500ms;
  auto res = commtest::run_gloo_threads(
      2, [](Communicator&) {}, opts, {},
      [](RankInfo& info) {
        if (info.rank == 1) info.size = 3;
      });
  // Whichever rank reads the other's registration first names the mismatch and fails at once,
  // removing its own files (a failed rank leaves the directory as it found it): the other then
  // names the mismatch too, or times out on a rank that is gone.
  const bool zero_names_it =
      has(res.errors[0], "rank 1 (host localhost) registered with world size 3 but this rank has 2");
  const bool one_names_it =
      has(res.errors[1], "rank 0 (host localhost) registered with world size 2 but this rank has 3");
  EXPECT_TRUE(zero_names_it || one_names_it) << res.errors[0] << " | " << res.errors[1];
  EXPECT_FALSE(res.errors[0].empty());
  EXPECT_FALSE(res.errors[1].empty());
}

TEST(GlooThreads, DuplicateRankIsReported) {
  CommOptions opts;
  opts.start_timeout = 1000ms;
  auto res = commtest::run_gloo_threads(2, [](Communicator&) {}, opts, /*ranks=*/{0, 0});
  int dup = 0;
  for (const auto& e : res.errors) dup += has(e, "rank 0 of job") && has(e, "is already registered");
  EXPECT_EQ(dup, 1) << res.errors[0] << " | " << res.errors[1];
}

TEST(GlooThreads, PeerArgumentsAreChecked) {
  auto res = commtest::run_gloo_threads(
      2,
      [](Communicator& comm) {
        char b[4] = {0};
        EXPECT_THROW(comm.broadcast(b, 4, 2), std::invalid_argument);
        EXPECT_THROW(comm.sendrecv(b, b, 4, -1), std::invalid_argument);
        comm.barrier();
      },
      CommOptions());
  expect_no_errors(res);
}

#endif  // BARESGD_HAVE_GLOO

// ---------------------------------------------------------------------------------------------
// Processes through make_communicator (tests/tool_comm_worker)

namespace {

[[maybe_unused]] std::vector<commtest::ProcSpec> gloo_world(int w, const std::vector<std::string>& args,
                                                            const std::vector<std::string>& extra_env = {}) {
  std::vector<commtest::ProcSpec> specs;
  const std::string job = commtest::unique_job("procs");
  for (int r = 0; r < w; ++r) {
    commtest::ProcSpec s;
    s.argv = {commtest::tool_path()};
    s.argv.insert(s.argv.end(), args.begin(), args.end());
    s.env = {"BARESGD_RANK=" + std::to_string(r),
             "BARESGD_SIZE=" + std::to_string(w),
             "BARESGD_LOCAL_RANK=" + std::to_string(r),
             "BARESGD_LOCAL_SIZE=" + std::to_string(w),
             "BARESGD_CROSS_RANK=0",
             "BARESGD_CROSS_SIZE=1",
             "BARESGD_COMM=gloo",
             "BARESGD_HOSTNAME=localhost",
             "BARESGD_HOST_ADDR=127.0.0.1",
             "BARESGD_JOB_ID=" + job};
    s.env.insert(s.env.end(), extra_env.begin(), extra_env.end());
    specs.push_back(s);
  }
  return specs;
}

[[maybe_unused]] void expect_all_ok(const commtest::RunAll& run, const char* backend) {
  ASSERT_FALSE(run.timed_out) << run.describe();
  for (size_t i = 0; i < run.procs.size(); ++i) {
    EXPECT_EQ(run.procs[i].status, 0) << run.describe();
    EXPECT_TRUE(has(run.procs[i].out, std::string("OK rank=")) &&
                has(run.procs[i].out, std::string("backend=") + backend))
        << run.describe();
  }
}

}  // namespace

#if BARESGD_HAVE_GLOO

TEST(GlooProcesses, ClosedFormsWithRendezvousDir) {
  ASSERT_EQ(access(commtest::tool_path().c_str(), X_OK), 0) << "missing " << commtest::tool_path();
  for (int w = 1; w <= 4; ++w) {
    commtest::TempDir dir("rdv");
    auto run = commtest::run_processes(gloo_world(w, {"--rendezvous-dir", dir.path(), "--big"}), 120);
    expect_all_ok(run, "gloo");
    for (int r = 0; r < w; ++r)
      EXPECT_TRUE(has(run.procs[r].out, "OK rank=" + std::to_string(r) + " size=" + std::to_string(w)))
          << run.describe();
  }
}

// The files in a directory (names only, "." and ".." left out).
static std::vector<std::string> files_in(const std::string& dir) {
  std::vector<std::string> names;
  if (DIR* d = ::opendir(dir.c_str())) {
    while (const dirent* e = ::readdir(d))
      if (std::string(e->d_name) != "." && std::string(e->d_name) != "..") names.push_back(e->d_name);
    ::closedir(d);
  }
  return names;
}

TEST(GlooProcesses, RendezvousDirIsEmptyAfterTheJob) {
  for (int w : {2, 4}) {
    commtest::TempDir dir("clean");
    auto run = commtest::run_processes(gloo_world(w, {"--rendezvous-dir", dir.path(), "--script", "info"}), 60);
    for (const auto& p : run.procs) ASSERT_EQ(p.status, 0) << run.describe();
    const std::vector<std::string> left = files_in(dir.path());
    std::string names;
    for (const auto& n : left) names += " " + n;
    EXPECT_TRUE(left.empty()) << w << " ranks left " << left.size() << " file(s) in the rendezvous dir:" << names;
    // The same directory and job id serve the next job.
    auto again = commtest::run_processes(gloo_world(w, {"--rendezvous-dir", dir.path(), "--script", "info"}), 60);
    for (const auto& p : again.procs) EXPECT_EQ(p.status, 0) << again.describe();
  }
}

TEST(GlooProcesses, StaleRendezvousDirIsReported) {
  commtest::TempDir dir("stale");
  auto specs = gloo_world(2, {"--rendezvous-dir", dir.path(), "--script", "info", "--start-timeout-ms", "2000"});
  // A job that failed its rendezvous (rank 1 never came) removes rank 0's registration on its way out.
  auto lone = commtest::run_processes({specs[0]}, 60);
  ASSERT_NE(lone.procs[0].status, 0) << lone.describe();
  EXPECT_TRUE(files_in(dir.path()).empty()) << lone.describe();
  // A rank killed with SIGKILL cannot: its claim stays, as this one never destroyed.
  std::string job;
  for (const std::string& kv : specs[0].env)
    if (kv.rfind("BARESGD_JOB_ID=", 0) == 0) job = kv.substr(15);
  auto* killed = new RendezvousFiles(dir.path());
  ASSERT_TRUE(killed->claim(job + "/baresgd/claim/0"));
  auto again = commtest::run_processes(specs, 60);  // same directory, same job id
  EXPECT_EQ(again.procs[0].status, 2) << again.describe();
  EXPECT_TRUE(has(again.procs[0].err, "is already registered in rendezvous dir " + dir.path())) << again.describe();
  EXPECT_NE(again.procs[1].status, 0) << again.describe();
}

TEST(GlooProcesses, ClosedFormsThroughLauncherStore) {
  const std::string secret = random_secret_hex();
  StoreServer server("127.0.0.1", 0, secret);
  server.start();
  const std::string addr = "127.0.0.1:" + std::to_string(server.port());
  auto run =
      commtest::run_processes(gloo_world(3, {}, {"BARESGD_STORE_ADDR=" + addr, "BARESGD_SECRET=" + secret}), 120);
  expect_all_ok(run, "gloo");
  // A wrong secret is refused with a message naming the store.
  auto bad = commtest::run_processes(
      gloo_world(2, {"--start-timeout-ms", "3000"}, {"BARESGD_STORE_ADDR=" + addr, "BARESGD_SECRET=wrong"}), 30);
  for (const auto& p : bad.procs) {
    EXPECT_EQ(p.status, 2) << bad.describe();
    EXPECT_TRUE(has(p.err, "cannot reach the launcher's rendezvous store at " + addr)) << bad.describe();
  }
  server.stop();
}

TEST(GlooProcesses, BindsTheGivenLoopbackAddresses) {
  // Three one-rank "hosts": ranks 0, 1, 2 (each local rank 0 of 1) bind 127.0.0.2, .3, .4. Gloo's
  // lower rank of each pair accepts on its bound address and the higher rank connects to it, so
  // ranks 0 and 1 must show accepted sockets on their own address and rank 2 connections to .2
  // and .3 (its own is never dialled).
  commtest::TempDir dir("bind");
  auto specs = gloo_world(3, {"--rendezvous-dir", dir.path(), "--script", "info"});
  for (int r = 0; r < 3; ++r) {
    auto& env = specs[r].env;
    const std::vector<std::string> one_host = {"BARESGD_HOST_ADDR=127.0.0.1", "BARESGD_LOCAL_SIZE=3",
                                               "BARESGD_LOCAL_RANK=" + std::to_string(r)};
    for (const std::string& value : one_host) env.erase(std::find(env.begin(), env.end(), value));
    env.push_back("BARESGD_HOST_ADDR=127.0.0." + std::to_string(r + 2));
    env.push_back("BARESGD_LOCAL_RANK=0");
    env.push_back("BARESGD_LOCAL_SIZE=1");
  }
  auto run = commtest::run_processes(specs, 60);
  ASSERT_FALSE(run.timed_out) << run.describe();
  for (int r = 0; r < 3; ++r) {
    ASSERT_EQ(run.procs[r].status, 0) << run.describe();
    std::smatch m;
    std::string out = run.procs[r].out;
    ASSERT_TRUE(std::regex_search(out, m, std::regex("SOCKETS ([^\n]*)"))) << out;
    const std::string socks = " " + m[1].str() + " ";
    if (r < 2) {
      EXPECT_TRUE(has(socks, " 127.0.0." + std::to_string(r + 2) + "->")) << out;
    } else {
      EXPECT_TRUE(has(socks, "->127.0.0.2 ") && has(socks, "->127.0.0.3 ")) << out;
    }
    std::stringstream ss(m[1].str());
    std::string pair;
    while (ss >> pair) {  // nothing outside 127.0.0.0/8
      EXPECT_EQ(pair.rfind("127.", 0), 0u) << out;
      EXPECT_TRUE(pair.find("->127.") != std::string::npos || has(pair, "->listen")) << out;
    }
  }
}

TEST(GlooProcesses, NetworkInterfaceByName) {
  commtest::TempDir dir("iface");
  auto run = commtest::run_processes(gloo_world(2, {"--rendezvous-dir", dir.path(), "--network-interface", "lo"}), 60);
  expect_all_ok(run, "gloo");
  auto bad =
      commtest::run_processes(gloo_world(2, {"--rendezvous-dir", dir.path(), "--network-interface", "nosuchif0"}), 30);
  for (const auto& p : bad.procs)
    EXPECT_TRUE(has(p.err, "--network-interface nosuchif0 is neither an IP address nor a network interface"))
        << bad.describe();
}

// GLOO_SOCKET_IFNAME, as PyTorch's Gloo reads it, when --network-interface is not given (issue 25).
TEST(GlooProcesses, GlooSocketIfnameByNameAndTheFlagFirst) {
  commtest::TempDir dir("gloo_ifname");
  expect_all_ok(commtest::run_processes(gloo_world(2, {"--rendezvous-dir", dir.path()}, {"GLOO_SOCKET_IFNAME=lo"}), 60),
                "gloo");
  auto bad =
      commtest::run_processes(gloo_world(2, {"--rendezvous-dir", dir.path()}, {"GLOO_SOCKET_IFNAME=nosuchif0"}), 30);
  for (const auto& p : bad.procs) {
    EXPECT_NE(p.status, 0) << bad.describe();
    EXPECT_TRUE(has(p.err, "GLOO_SOCKET_IFNAME=nosuchif0 is neither an IP address nor a network interface"))
        << bad.describe();
  }
  expect_all_ok(commtest::run_processes(gloo_world(2, {"--rendezvous-dir", dir.path(), "--network-interface", "lo"},
                                                   {"GLOO_SOCKET_IFNAME=nosuchif0"}),
                                        60),
                "gloo");
}

TEST(GlooProcesses, CrossRanksComputedFromLocalRanks) {
  // Two "hosts" of two ranks each, no BARESGD_CROSS_*: cross ranks come from an allgather.
  commtest::TempDir dir("cross");
  auto specs = gloo_world(4, {"--rendezvous-dir", dir.path(), "--script", "info"});
  for (int r = 0; r < 4; ++r) {
    auto& env = specs[r].env;
    env.erase(std::remove_if(env.begin(), env.end(),
                             [](const std::string& kv) {
                               return kv.rfind("BARESGD_LOCAL_", 0) == 0 || kv.rfind("BARESGD_CROSS_", 0) == 0;
                             }),
              env.end());
    env.push_back("BARESGD_LOCAL_RANK=" + std::to_string(r % 2));
    env.push_back("BARESGD_LOCAL_SIZE=2");
  }
  auto run = commtest::run_processes(specs, 60);
  ASSERT_FALSE(run.timed_out) << run.describe();
  for (int r = 0; r < 4; ++r) {
    EXPECT_EQ(run.procs[r].status, 0) << run.describe();
    EXPECT_TRUE(has(run.procs[r].out, "local=" + std::to_string(r % 2) + "/2 cross=" + std::to_string(r / 2) + "/2"))
        << run.describe();
  }
}

TEST(GlooProcesses, MissingRankFailsWithinStartTimeout) {
  commtest::TempDir dir("missing");
  auto specs = gloo_world(2, {"--rendezvous-dir", dir.path(), "--start-timeout-ms", "1500"});
  specs.pop_back();  // rank 1 never shows up
  auto run = commtest::run_processes(specs, 30);
  ASSERT_FALSE(run.timed_out) << run.describe();
  EXPECT_EQ(run.procs[0].status, 2) << run.describe();
  EXPECT_TRUE(has(run.procs[0].err,
                  "rank 0 (host localhost): gloo rendezvous timed out after 1.5 s: rank 1 never "
                  "registered (1 of 2 ranks arrived"))
      << run.describe();
  EXPECT_GE(run.seconds, 1.5) << "gave up before --start-timeout";
  std::cerr << "[ timing ] a process rendezvous with a missing rank gave up after " << run.seconds
            << " s (timeout 1.5 s)\n";
  // The failed rank removed what it wrote: the directory is as it was found.
  auto left = testutil::run("ls -A '" + dir.path() + "'", 10);
  EXPECT_EQ(left.out, "") << "a failed job left rendezvous files behind";
}

TEST(GlooProcesses, UnbindableAddressIsReported) {
  // 192.0.2.1 (TEST-NET-1) is not an address of this host: bind(2) fails locally, nothing is sent.
  commtest::TempDir dir("unbindable");
  auto specs = gloo_world(2, {"--rendezvous-dir", dir.path(), "--start-timeout-ms", "2000"});
  auto& env = specs[0].env;
  env.erase(std::find(env.begin(), env.end(), "BARESGD_HOST_ADDR=127.0.0.1"));
  env.push_back("BARESGD_HOST_ADDR=192.0.2.1");
  auto run = commtest::run_processes({specs[0]}, 30);
  EXPECT_EQ(run.procs[0].status, 2) << run.describe();
  EXPECT_TRUE(has(run.procs[0].err, "rank 0 (host localhost): cannot bind Gloo to 192.0.2.1")) << run.describe();
}

TEST(GlooProcesses, NeedsARendezvous) {
  auto specs = gloo_world(2, {});
  auto run = commtest::run_processes({specs[0]}, 30);
  EXPECT_EQ(run.procs[0].status, 2) << run.describe();
  EXPECT_TRUE(has(run.procs[0].err, "Gloo needs a rendezvous")) << run.describe();
  EXPECT_TRUE(has(run.procs[0].err, "--rendezvous-dir")) << run.describe();
}

#endif  // BARESGD_HAVE_GLOO

TEST(MpiProcesses, ClosedFormsUnderMpirun) {
  const std::string mpirun = commtest::find_in_path("mpirun");
  if (mpirun.empty()) BARESGD_SKIP("mpirun is not installed");
#if !BARESGD_HAVE_MPI
  // Built without MPI: the tool must say so clearly.
  commtest::ProcSpec s{{mpirun, "--allow-run-as-root", "-np", "1", commtest::tool_path()}, {}};
  auto run = commtest::run_processes({s}, 60);
  EXPECT_TRUE(has(run.procs[0].err, "built without MPI")) << run.describe();
#else
  for (int w = 1; w <= 4; ++w) {
    commtest::ProcSpec s{{mpirun, "--allow-run-as-root", "--oversubscribe", "-np", std::to_string(w),
                          commtest::tool_path(), "--script", "check"},
                         {}};
    if (w == 4) s.argv.push_back("--big");
    auto run = commtest::run_processes({s}, 180);
    ASSERT_FALSE(run.timed_out) << run.describe();
    EXPECT_EQ(run.procs[0].status, 0) << run.describe();
    for (int r = 0; r < w; ++r)
      EXPECT_TRUE(has(run.procs[0].out, "OK rank=" + std::to_string(r) + " size=" + std::to_string(w) +
                                            " backend=mpi source=ompi local=" + std::to_string(r) + "/" +
                                            std::to_string(w) + " cross=0/1"))
          << run.describe();
  }
#endif
}

TEST(RendezvousFiles, AnotherUsersKeyOrClaimIsNamedNotTrusted) {
  if (::geteuid() != 0) BARESGD_SKIP("needs root to plant files as another user");
  commtest::TempDir dir("foreign");
  RendezvousFiles files(dir.path());
  const std::string key = dir.path() + "/" + rendezvous_file_name("job/gloo/0");
  const std::string claim = dir.path() + "/claim-" + rendezvous_file_name("c/1");
  testutil::write_file(key, "attacker's address");
  testutil::write_file(claim, "");
  ASSERT_EQ(::chown(key.c_str(), 65534, 65534), 0);
  ASSERT_EQ(::chown(claim.c_str(), 65534, 65534), 0);
  std::vector<char> v;
  try {
    files.get("job/gloo/0", &v);
    ADD_FAILURE() << "another user's key file was read as a peer's";
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()), "--rendezvous-dir " + dir.path() + ": " + key +
                                         " belongs to uid 65534, not to this job's user (uid 0); refusing it");
  }
  EXPECT_THROW(files.claim("c/1"), std::runtime_error);
}

TEST(RendezvousFiles, ADirectoryOthersCanWriteIsRefused) {
  commtest::TempDir dir("open");
  ASSERT_EQ(::chmod(dir.path().c_str(), 0777), 0);
  try {
    RendezvousFiles files(dir.path());
    ADD_FAILURE() << "a world-writable, non-sticky --rendezvous-dir was accepted";
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()), dir.path() +
                                         ": --rendezvous-dir directory is writable by other users (mode 0777) and "
                                         "not sticky; refusing to write there");
  }
}

TEST(RendezvousFiles, KeysMapToDistinctPlainFileNames) {
  EXPECT_EQ(rendezvous_file_name("job-1/gloo/0"), "job-1%2Fgloo%2F0");
  EXPECT_EQ(rendezvous_file_name("a_b"), "a%5Fb");
  EXPECT_EQ(rendezvous_file_name("%"), "%25");
  EXPECT_EQ(rendezvous_file_name(std::string("\0\xff", 2)), "%00%FF");
  // Keys the old '_' replacement merged ("a/b", "a_b", "a b") stay apart.
  EXPECT_NE(rendezvous_file_name("a/b"), rendezvous_file_name("a_b"));
  EXPECT_NE(rendezvous_file_name("a/b"), rendezvous_file_name("a b"));
}

TEST(RendezvousFiles, RemovesOnlyWhatItWrote) {
  commtest::TempDir dir("files");
  RendezvousFiles mine(dir.path()), theirs(dir.path());
  mine.set("k/1", {'x', 'y'});
  EXPECT_TRUE(mine.claim("c/1"));
  EXPECT_FALSE(theirs.claim("c/1"));
  theirs.set("k/2", {'z'});
  std::vector<char> v;
  ASSERT_TRUE(theirs.get("k/1", &v));
  EXPECT_EQ(std::string(v.begin(), v.end()), "xy");
  mine.remove_own_files();
  EXPECT_FALSE(theirs.has("k/1"));
  EXPECT_TRUE(theirs.has("k/2"));
  EXPECT_TRUE(theirs.claim("c/1"));  // the marker went with its owner
  EXPECT_FALSE(mine.get("nothing", &v));
}
