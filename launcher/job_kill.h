// job_kill: `launch --kill-job ID`, run by ./launch over ssh on a host whose agent went silent
// (stopped, hung): SIGKILLs every process of ours there whose environment holds
// BARESGD_JOB_ID=ID — the agent (started as `env BARESGD_JOB_ID=ID launch --agent`), its
// watchdog, the rank and every descendant, also those that left the rank's group with setsid.
// SIGKILL reaches a stopped process too, so nothing of the job is left to wake up on SIGCONT.
#pragma once
#include <string>

// A job id as ./launch makes them: 1..64 lowercase hex digits.
bool valid_job_id(const std::string& id);

// Kills the job's processes here; waits (at most wait_ms) until none is left. Returns 0 when none
// is left, 1 (said: "launch --kill-job: N process(es) of job ID still alive after S s") when some
// are, 2 (said) for a malformed id.
int kill_job_main(const std::string& job_id, int wait_ms = 5000);
