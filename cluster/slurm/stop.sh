#!/usr/bin/env bash
# Stops the daemons cluster/slurm/start.sh started (slurmd, slurmctld,
# munged), by the PIDs it recorded, and nothing else: a munged that was
# already running before start.sh is left alone. Jobs still in the queue are
# cancelled first. Safe to run twice or when nothing was started.
#
#   stop.sh            stop all three
#   stop.sh --only D   stop one of them (start.sh uses it to restart a daemon)
# Environment: HOPWISE_SLURM_DIR as for start.sh.
set -uo pipefail

dir=${HOPWISE_SLURM_DIR:-/var/lib/hopwise-slurm}
daemons=(slurmd slurmctld munged)
if [ "${1:-}" = --only ]; then
  [ -n "${2:-}" ] || { echo "stop.sh: --only needs slurmd, slurmctld or munged" >&2; exit 2; }
  daemons=("$2")
fi

# running PID: the process exists and is not a zombie waiting to be reaped
# (where PID 1 does not reap orphans, a stopped daemon stays a zombie).
running() {
  local stat
  read -r stat <"/proc/$1/stat" 2>/dev/null || return 1
  stat=${stat##*) }
  [ "${stat%% *}" != Z ]
}

# pid_of NAME: the recorded PID if that process still runs the program NAME
# (a recycled PID is not ours).
pid_of() {
  local f="$dir/pids/$1.pid" pid
  [ -s "$f" ] || return 1
  pid=$(cat "$f")
  running "$pid" && [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = "$1" ] && echo "$pid"
}

if [ "${#daemons[@]}" -gt 1 ] && pid_of slurmctld >/dev/null && command -v squeue >/dev/null; then
  jobs=$(squeue -h -o %A 2>/dev/null | sort -u | tr '\n' ' ')
  if [ -n "${jobs// /}" ]; then
    echo "cancelling jobs: $jobs"
    # shellcheck disable=SC2086
    scancel $jobs 2>/dev/null || true
    for _ in $(seq 20); do [ -z "$(squeue -h 2>/dev/null)" ] && break; sleep 0.5; done
  fi
fi

status=0
for d in "${daemons[@]}"; do
  if ! pid=$(pid_of "$d"); then
    rm -f "$dir/pids/$d.pid"
    continue
  fi
  kill -TERM "$pid" 2>/dev/null
  for _ in $(seq 100); do running "$pid" || break; sleep 0.1; done
  if running "$pid"; then
    echo "$d (PID $pid) still running 10 s after SIGTERM: sending SIGKILL" >&2
    kill -KILL "$pid" 2>/dev/null
    sleep 0.5
  fi
  if running "$pid" && [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = "$d" ]; then
    echo "stop.sh: could not stop $d (PID $pid)" >&2
    status=1
  else
    echo "stopped $d (PID $pid)"
    rm -f "$dir/pids/$d.pid"
  fi
done
exit $status
