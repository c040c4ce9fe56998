// loopback_spread: the loopback address each rank on a host binds, so that the ports its sockets
// take are counted per rank, not for the whole host.
//
// Why: Linux gives a socket bound to port 0 (every Gloo pair listener, every rank's gate) a port
// that no other socket holds on the same address, a socket in TIME_WAIT included, and the ports
// come from one range (net.ipv4.ip_local_port_range, 32768-60999 by default: 28,232). With every
// rank of a host on 127.0.0.1, whatever one rank holds is taken from all the others: at W = 256
// the TIME_WAIT sockets the pair hand-overs left (one per pair and mesh, W(W-1) = 65,280; they
// now close with a reset, comm/gloo_handover.cc) used up the range, and the next pair listener
// failed with "Address already in use". The whole of 127.0.0.0/8 is on the loopback interface, so
// every local rank can have an address of its own: its gate, its pair listeners and the dialing
// ends of its own connections (bound there without a port, comm/socket_io.h) live on it, a rank's
// ports are counted on its own address, and `ss -tn` shows which local ranks a connection joins.
//
// The rule: local rank r binds base + 256 r when base is an IPv4 loopback address. Rank 0 keeps
// base (127.0.0.1), then 127.0.1.1, 127.0.2.1, ..., 127.0.255.1, 127.1.0.1, ... The last byte
// stays base's, so fake hosts at 127.0.0.2, 127.0.0.3 (tests/test_hosts.sh) keep theirs apart.
#pragma once
#include <string>

// Whether ip is an IPv4 address in 127.0.0.0/8 (written as four decimal numbers). Pure.
bool is_ipv4_loopback(const std::string& ip);

// The address local rank `local_rank` binds: base + 256 * local_rank when base is an IPv4 loopback
// address, else base itself (an IPv6 address, a real interface's). A negative local rank counts
// as 0. Pure. Throws std::invalid_argument ("... leaves 127.0.0.0/8") when the sum would leave
// 127.0.0.0/8 (more than 65,535 ranks on one host from 127.0.0.1).
std::string loopback_address_for_local_rank(const std::string& base, int local_rank);

// What to add to an error line when a socket found no free port ("Address already in use" from a
// bind to port 0, "Cannot assign requested address" from a connect): the address whose ports ran
// out and the kernel's range (port_range as /proc/sys/net/ipv4/ip_local_port_range has it), and,
// when that address is a loopback one every local rank shares because the user wrote it out
// (`shared`), the way out. "" for any other error. Pure.
std::string no_free_port_hint(const std::string& error, const std::string& ip, const std::string& port_range,
                              bool shared);
