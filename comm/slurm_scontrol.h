// slurm_scontrol: the thin I/O shell around comm/slurm_node_addr.h — asks Slurm for its nodes'
// addresses by running `scontrol -o show node NODE1,NODE2,...` (scontrol is on every Slurm node;
// it asks slurmctld, one request for all the nodes) and turns each NodeAddr into an IPv4
// address: an IPv4 literal as it is, a host name through getaddrinfo, as Slurm's daemons resolve
// it. A NodeName is never resolved.
#pragma once
#include <chrono>
#include <string>
#include <vector>

// The IPv4 address of each of nodes (Slurm NodeNames), in order. Throws std::runtime_error with
// one line starting "scontrol -o show node LIST" when scontrol is missing, fails (its first line
// of output), does not finish within timeout (it is killed) or does not describe a node, or when
// a NodeAddr does not resolve.
std::vector<std::string> slurm_node_ipv4s(const std::vector<std::string>& nodes, std::chrono::milliseconds timeout);
