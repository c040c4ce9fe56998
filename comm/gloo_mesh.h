// gloo_mesh: phase B of comm/backend_gloo's connect: a full Gloo mesh whose every pair runs over a
// socket comm/pair_gate already authenticated, handed to Gloo pair by pair through
// comm/gloo_handover (no store, no waiting for another rank: each side's work is local).
#pragma once
#include <gloo/rendezvous/context.h>
#include <gloo/transport/device.h>

#include <chrono>
#include <memory>
#include <vector>

class PairGate;

// Builds a Gloo context for (rank, size) on `device` with the pairs of `mesh` of `gate`: toward a
// lower rank this rank is the gate's client and Gloo's active side, toward a higher one the
// passive side. `timeout` is every pair's I/O timeout afterwards, and bounds each pair's hand-over
// (local work: the doorbell is ours, so only a host too loaded to run the device thread waits;
// the start-up deadline does not apply here, since no other rank is waited for). Throws (a Gloo
// exception or std::runtime_error) naming the peer whose pair failed.
std::shared_ptr<gloo::rendezvous::Context> connect_gloo_mesh(std::shared_ptr<gloo::transport::Device> device,
                                                             PairGate* gate, int mesh, int rank, int size,
                                                             int local_rank, std::chrono::milliseconds timeout);
