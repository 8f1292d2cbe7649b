#!/usr/bin/env bash
# Starts a single-node Slurm cluster on this machine, without systemd:
# munged (as the munge user), slurmctld and slurmd, each in the background
# with its PID recorded for stop.sh. Installs Debian's slurm-wlm and munge
# when they are missing. Waits until sinfo reports the node idle.
#
# Idempotent: daemons this script started earlier and that still run are
# kept; a second run only starts what is missing.
#
# Needs root. Environment:
#   HOPWISE_SLURM_DIR      state, logs and PID files (default /var/lib/hopwise-slurm)
#   HOPWISE_SLURM_TIMEOUT  seconds to wait for the node to be idle (default 60)
# Writes /etc/slurm/slurm.conf (refuses to replace one it did not write).
set -euo pipefail

dir=${HOPWISE_SLURM_DIR:-/var/lib/hopwise-slurm}
timeout=${HOPWISE_SLURM_TIMEOUT:-60}
conf=/etc/slurm/slurm.conf
marker="# written by hopwise cluster/slurm/start.sh"
t0=$(date +%s.%N)

die() { echo "start.sh: $*" >&2; exit 1; }

case $dir in
  /*[[:space:]]* | *[[:space:]]*) die "HOPWISE_SLURM_DIR '$dir': slurm.conf cannot take a path with spaces; pick another" ;;
  /*) ;;
  *) die "HOPWISE_SLURM_DIR '$dir': must be an absolute path" ;;
esac
[ "$(id -u)" = 0 ] || die "needs root (it installs packages and starts munged, slurmctld and slurmd)"
if [ -e "$conf" ] && ! grep -qF "$marker" "$conf"; then
  die "$conf exists and was not written by this script: this machine has a Slurm of its own; use that, or move $conf away"
fi

# ---- packages -------------------------------------------------------------
missing=()
for cmd in munged:munge slurmctld:slurm-wlm slurmd:slurm-wlm sinfo:slurm-wlm; do
  command -v "${cmd%%:*}" >/dev/null 2>&1 || missing+=("${cmd#*:}")
done
if [ "${#missing[@]}" -gt 0 ]; then
  command -v apt-get >/dev/null 2>&1 || die "slurm-wlm and munge are missing and there is no apt-get; install them by hand"
  echo "installing slurm-wlm and munge with apt-get"
  # Keep the packages' init scripts from starting daemons: this script
  # starts them itself and must know their PIDs.
  own_policy=
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
    chmod 755 /usr/sbin/policy-rc.d
    own_policy=1
  fi
  install_pkgs() {
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends slurm-wlm munge >/tmp/hopwise-slurm-apt.log 2>&1
  }
  if ! install_pkgs; then
    apt-get update -q >/tmp/hopwise-slurm-apt-update.log 2>&1 || { cat /tmp/hopwise-slurm-apt-update.log >&2; die "apt-get update failed"; }
    install_pkgs || { tail -n 40 /tmp/hopwise-slurm-apt.log >&2; if [ -n "$own_policy" ]; then rm -f /usr/sbin/policy-rc.d; fi; die "apt-get install slurm-wlm munge failed (log above)"; }
  fi
  if [ -n "$own_policy" ]; then rm -f /usr/sbin/policy-rc.d; fi
  t_inst=$(date +%s.%N)
  echo "installed in $(awk "BEGIN {printf \"%.1f\", $t_inst - $t0}") s"
fi
for cmd in munged munge unmunge slurmctld slurmd sinfo scontrol setpriv setsid; do
  command -v "$cmd" >/dev/null 2>&1 || die "$cmd not found after installing slurm-wlm and munge"
done

t_start=$(date +%s.%N)

mkdir -p "$dir/pids" "$dir/log" "$dir/slurmctld" "$dir/slurmd"
chmod 755 "$dir" "$dir/log"

# runs PID NAME: process PID runs the program NAME and is not a zombie
# (where PID 1 does not reap orphans, a stopped daemon stays a zombie).
# Shell built-ins only: other_proc calls it for every process.
runs() {
  local comm stat
  read -r comm <"/proc/$1/comm" 2>/dev/null && [ "$comm" = "$2" ] || return 1
  read -r stat <"/proc/$1/stat" 2>/dev/null || return 1
  stat=${stat##*) }
  [ "${stat%% *}" != Z ]
}

# alive NAME: true when the PID recorded for NAME runs the program NAME.
alive() {
  local f="$dir/pids/$1.pid"
  [ -s "$f" ] && runs "$(cat "$f")" "$1"
}

# other_proc NAME: the PID of a process running the program NAME (from /proc,
# since procps may not be installed), or nothing.
other_proc() {
  local c pid
  for c in /proc/[0-9]*/comm; do
    pid=${c#/proc/}; pid=${pid%/comm}
    if runs "$pid" "$1"; then echo "$pid"; return; fi
  done
}

# launch NAME CMD...: runs CMD in its own session with stdin, stdout and
# stderr detached, records its PID (the shell execs CMD, so the PID is the
# daemon's, whatever setsid does).
launch() {
  local name=$1 pidf="$dir/pids/$1.pid"
  shift
  rm -f "$pidf"
  # shellcheck disable=SC2016  # $$ and $@ are the inner shell's
  setsid sh -c 'echo $$ >"$0.tmp" && mv "$0.tmp" "$0" && exec "$@"' "$pidf" "$@" \
    </dev/null >>"$dir/log/$name.out" 2>&1 &
  # Until the exec (via setpriv for munged), the process is not yet NAME.
  for _ in $(seq 50); do alive "$name" && break; sleep 0.1; done
  alive "$name" || fail "$name did not start"
  echo "started $name (PID $(cat "$pidf"))"
}

show_logs() {
  local f
  # The daemons run in the foreground, so their *.out (stderr) repeats
  # their log file; it also holds what they print before opening the log.
  for f in munged.out:30 slurmctld.log:40 slurmctld.out:10 slurmd.log:40 slurmd.out:10; do
    [ -s "$dir/log/${f%:*}" ] || continue
    echo "---- $dir/log/${f%:*} (last ${f#*:} lines)" >&2
    tail -n "${f#*:}" "$dir/log/${f%:*}" >&2
  done
  echo "---- stop what was started with $(dirname "$0")/stop.sh" >&2
}

fail() { echo "start.sh: $*" >&2; show_logs; exit 1; }

# ---- munge ----------------------------------------------------------------
id munge >/dev/null 2>&1 || die "no munge user (the munge package creates it)"
install -d -o munge -g munge -m 0700 /etc/munge /var/lib/munge /var/log/munge
install -d -o munge -g munge -m 0755 /run/munge
if [ ! -s /etc/munge/munge.key ]; then
  echo "creating /etc/munge/munge.key"
  dd if=/dev/urandom of=/etc/munge/munge.key bs=1024 count=1 status=none
fi
chown munge:munge /etc/munge/munge.key
chmod 0400 /etc/munge/munge.key

munge_works() { munge -n 2>/dev/null | unmunge >/dev/null 2>&1; }
if alive munged; then
  echo "munged already running (PID $(cat "$dir/pids/munged.pid"))"
elif munge_works; then
  echo "using the munged that is already running (not started here, so stop.sh leaves it alone)"
else
  # --force: start even if a stale socket of a dead munged is left over.
  launch munged setpriv --reuid=munge --regid=munge --init-groups \
    munged --foreground --force
  for _ in $(seq 50); do munge_works && break; sleep 0.1; done
  munge_works || fail "munged does not answer (munge -n | unmunge fails)"
fi

# ---- slurm.conf -----------------------------------------------------------
# The node is named after this host's short name, and every daemon is
# reached at 127.0.0.1, so the host name need not resolve (no /etc/hosts
# entry needed).
node=$(uname -n)
node=${node%%.*}
# slurmd -C prints this machine's CPUs, topology and memory as slurmd sees
# them; config_overrides below keeps a small mismatch from draining the node.
hw=$(slurmd -C 2>/dev/null | grep -m 1 '^NodeName=' || true)
cpus=$(sed -n 's/.* CPUs=\([0-9]*\).*/\1/p' <<<"$hw")
mem=$(sed -n 's/.* RealMemory=\([0-9]*\).*/\1/p' <<<"$hw")
if [ -n "$cpus" ] && [ -n "$mem" ]; then
  hw=${hw#NodeName=* }  # CPUs=... Boards=... SocketsPerBoard=... RealMemory=...
else
  cpus=$(nproc)
  mem=$(( $(awk '/^MemTotal:/ {print $2}' /proc/meminfo) / 1024 ))
  hw="CPUs=$cpus RealMemory=$mem"
fi

new_conf=$(cat <<EOF
$marker; rewritten on each start.
# A single-node cluster for tests: no systemd, no cgroups, no accounting.
ClusterName=hopwise
SlurmctldHost=$node(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
SlurmctldPort=6817
SlurmdPort=6818
StateSaveLocation=$dir/slurmctld
SlurmdSpoolDir=$dir/slurmd
SlurmctldPidFile=$dir/slurmctld/slurmctld.pid
SlurmdPidFile=$dir/slurmd/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
SwitchType=switch/none
MailProg=/bin/true
SchedulerType=sched/backfill
# Start queued array tasks as soon as CPUs free up (the defaults wait ~2 s).
SchedulerParameters=sched_min_interval=0,batch_sched_delay=0
# sbatch --wait polls after 2 s, then 8 s, then every 32 s, unless
# MinJobAge/2 is at most 2 s: then every 2 s. Finished jobs' records are
# dropped after MinJobAge (plus up to a minute), not 300 s.
MinJobAge=5
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SlurmdParameters=config_overrides
ReturnToService=2
MaxArraySize=1001
NodeName=$node NodeAddr=127.0.0.1 NodeHostname=$node $hw State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
)
mkdir -p /etc/slurm
conf_changed=
if [ ! -e "$conf" ] || [ "$(cat "$conf")" != "$new_conf" ]; then
  printf '%s\n' "$new_conf" >"$conf"
  conf_changed=1
fi

# ---- slurmctld and slurmd -------------------------------------------------
for d in slurmctld slurmd; do
  if alive "$d" && [ -n "$conf_changed" ]; then
    echo "slurm.conf changed: restarting $d"
    "$(dirname "$0")/stop.sh" --only "$d" >/dev/null
  fi
done
for d in slurmctld slurmd; do
  if alive "$d"; then
    echo "$d already running (PID $(cat "$dir/pids/$d.pid"))"
    continue
  fi
  pid=$(other_proc "$d")
  if [ -n "$pid" ]; then
    fail "a $d not started by this script runs (PID $pid); stop it first"
  fi
  if [ "$d" = slurmctld ]; then
    launch slurmctld slurmctld -D
  else
    slurmd_launched=$(date +%Y-%m-%dT%H:%M:%S)
    launch slurmd slurmd -D -N "$node"
  fi
done

# ---- wait until the node is idle ------------------------------------------
deadline=$(( $(date +%s) + timeout ))
state=
# A slurmd started just now must have registered (slurmctld may still show
# the node idle from before, with a slurmd that then failed to start).
while :; do
  for d in slurmctld slurmd; do alive "$d" || fail "$d exited"; done
  state=$(sinfo -h -N -n "$node" -o %t 2>/dev/null | head -n 1 || true)
  if [ "$state" = idle ]; then
    [ -z "${slurmd_launched:-}" ] && break
    registered=$(scontrol show node "$node" 2>/dev/null | sed -n 's/.*SlurmdStartTime=\([^ ]*\).*/\1/p')
    [[ "$registered" > "$slurmd_launched" || "$registered" == "$slurmd_launched" ]] && break
  fi
  [ "$(date +%s)" -lt "$deadline" ] || fail "node $node not idle after ${timeout}s (sinfo state: '${state:-none}')"
  sleep 0.5
done
t1=$(date +%s.%N)
printf 'Slurm %s: node %s idle (%s CPUs, %s MB) after %.1f s; config %s, logs in %s/log\n' \
  "$(sinfo -V | awk '{print $2}')" "$node" "$cpus" "$mem" "$(awk "BEGIN {print $t1 - $t_start}")" "$conf" "$dir"
