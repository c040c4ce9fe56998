// agent: `launch --agent`, the remote half of a Gloo rank started over ssh (protocol in
// agent_protocol.h).
//
// It reads the spawn request from stdin, forks the rank into its own process group with that
// environment (the rank's stdout/stderr are the agent's, i.e. the ssh channel's; its stdin is
// /dev/null), reports the rank's pid, then keeps reading stdin for control bytes. EOF on stdin
// (the launcher died or the ssh session was lost) -> SIGTERM to the rank's group, SIGKILL after a
// grace period, exit. SIGTERM/SIGINT/SIGHUP sent to the agent are forwarded to the rank's group.
// When the rank exits, leftovers in its group are terminated, the status line is written and the
// agent exits with the rank's status (exit code, or 128 + signal).
#pragma once

int agent_main();
