// slurm_node_addr: the address of a Slurm node as Slurm itself knows it — the NodeAddr of
// slurm.conf, which `scontrol -o show node LIST` prints, one line per node:
//   "NodeName=node17 Arch=x86_64 ... NodeAddr=10.1.0.17 NodeHostName=node17 ... Reason=..."
// Pure: the text comes in, the addresses go out; comm/slurm_scontrol.h runs scontrol. A node's
// name (NodeName, what SLURM_STEP_NODELIST lists) need not resolve through NSS at all; Slurm's
// own daemons reach the node at NodeAddr (an IP address, or a host name that resolves), so the
// ranks do too.
//
// Rules: each line that starts with "NodeName=" describes one node; its NodeAddr is the value of
// the first word of that line that starts with "NodeAddr=" (words are separated by spaces; the
// free-text fields Slurm prints last, Reason and Comment, cannot move it). Other lines are
// ignored. Errors are thrown as SlurmNodeAddrError with one line naming the node and what
// scontrol said (cut, control bytes shown as \xNN).
#pragma once
#include <stdexcept>
#include <string>
#include <vector>

struct SlurmNodeAddrError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

constexpr size_t kSlurmMaxNodeAddr = 255;

// The NodeAddr of each of nodes, in order, from scontrol's output. Throws when a node is missing
// from it, is listed twice with different addresses, or has a NodeAddr that is empty, longer than
// kSlurmMaxNodeAddr or not made of letters, digits, '.', '-', '_' and ':'.
std::vector<std::string> parse_scontrol_node_addrs(const std::string& output, const std::vector<std::string>& nodes);
