// agent: `launch --agent`, which every Gloo rank runs under: started by ./launch itself for a rank
// on its machine (stdin, stdout, stderr are pipes to the launcher), by ssh on a remote host, or by
// srun as a job step (protocol in agent_protocol.h). It is the one place that stops a rank's tree.
//
// It reads the spawn request from stdin, starts the rank in its own process group with that
// environment (process.h; the rank's stdout/stderr are the agent's, i.e. the pipes, the ssh
// channel's or srun's; its stdin is /dev/null), reports the rank's pid, then keeps reading stdin
// for control bytes. EOF on stdin (the launcher died or the ssh session was lost) -> SIGTERM to
// the rank's group, SIGKILL after a grace period, exit. SIGTERM/SIGINT/SIGHUP sent to the agent are forwarded to the rank's group.
// When the rank exits, leftovers in its group are terminated, the status line is written and the
// agent exits with the rank's status (exit code, or 128 + signal).
#pragma once

int agent_main();
