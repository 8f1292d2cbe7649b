#!/usr/bin/env bash
# Runs the README's sweep example as a Slurm job array on a running cluster
# (cluster/slurm/start.sh) and checks that the merged results equal the
# one-machine sweep's: runs.csv, points.csv and the plots byte for byte,
# summary.json apart from wall_s, report.html apart from its wall time.
#
#   sweep-check.sh [HOPWISE]
# HOPWISE is the hopwise binary: this argument, else $HOPWISE_BIN, else
# target/release/hopwise under the repository (or $CARGO_TARGET_DIR/release).
# Environment:
#   HOPWISE_SWEEP_CHECK_DIR      work directory (default a new temporary one,
#                                removed when the check passes; a given one is kept)
#   HOPWISE_SWEEP_CHECK_TIMEOUT  seconds to wait for the jobs (default 300)
set -Eeuo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
die() { echo "sweep-check.sh: $*" >&2; exit 1; }

hw=${1:-${HOPWISE_BIN:-}}
if [ -z "$hw" ]; then
  hw=$root/target/release/hopwise
  if [ ! -x "$hw" ] && [ -n "${CARGO_TARGET_DIR:-}" ]; then hw=$CARGO_TARGET_DIR/release/hopwise; fi
fi
[ -x "$hw" ] || die "no hopwise binary at $hw: build it with 'cargo build --release' or pass its path (argument or HOPWISE_BIN)"
# The job scripts name the binary by its absolute path: every node runs
# the very binary that wrote the plan.
hw=$(cd "$(dirname "$hw")" && pwd)/$(basename "$hw")

command -v sbatch >/dev/null 2>&1 || die "no sbatch: start a cluster with cluster/slurm/start.sh"
state=$(sinfo -h -o %t 2>/dev/null | head -n 1) || die "sinfo cannot reach slurmctld: start the cluster with cluster/slurm/start.sh"
[ -n "$state" ] || die "sinfo lists no nodes: start the cluster with cluster/slurm/start.sh"
case $state in
  idle | mix | alloc | comp) ;;
  *) sinfo -N -l >&2 || true; die "the node is '$state', not ready to run jobs (see its Reason above; the daemons' logs are in ${HOPWISE_SLURM_DIR:-/var/lib/hopwise-slurm}/log)" ;;
esac
timeout_s=${HOPWISE_SWEEP_CHECK_TIMEOUT:-300}

if [ -n "${HOPWISE_SWEEP_CHECK_DIR:-}" ]; then
  work=$HOPWISE_SWEEP_CHECK_DIR
  keep=1
  mkdir -p "$work"
  work=$(cd "$work" && pwd)
  rm -rf "$work/plan" "$work/one"
else
  work=$(mktemp -d "${TMPDIR:-/tmp}/hopwise-sweep-check.XXXXXX")
  keep=
fi
plan=$work/plan
one=$work/one

# The README's sweep example.
# shellcheck disable=SC2054  # the commas are in the --vary value
sweep=(sweep --vary link.bottleneck.queue=20pkt,50pkt,100pkt,150pkt --seeds 5)
shards=4

now() { date +%s.%N; }
since() { awk "BEGIN {printf \"%.1f\", $(now) - $1}"; }
t_all=$(now)

on_fail() {
  echo "sweep-check.sh: FAILED at line $1 of $0; work directory kept: $work" >&2
  if [ -d "$plan/slurm/logs" ]; then
    for f in "$plan"/slurm/logs/*; do
      [ -f "$f" ] || continue
      echo "---- $f" >&2
      tail -n 30 "$f" >&2
    done
  fi
  echo "---- the daemons' logs: ${HOPWISE_SLURM_DIR:-/var/lib/hopwise-slurm}/log" >&2
}
trap 'on_fail $LINENO' ERR

step() { echo "== $*"; }

step "plan: hopwise ${sweep[*]} --plan $plan"
t=$(now)
"$hw" "${sweep[@]}" --plan "$plan"
test -s "$plan/plan.json"
echo "   ($(since "$t") s)"

step "job scripts: hopwise sweep slurm $plan --shards $shards"
t=$(now)
"$hw" sweep slurm "$plan" --shards "$shards"
for f in array.sbatch merge.sbatch submit.sh; do test -s "$plan/slurm/$f"; done
test -x "$plan/slurm/submit.sh"
echo "   ($(since "$t") s)"

step "submit: $plan/slurm/submit.sh --wait"
t=$(now)
# timeout: a job that never starts would otherwise keep sbatch --wait
# waiting for ever.
rc=0
(cd "$work" && timeout "$timeout_s" "$plan/slurm/submit.sh" --wait) || rc=$?
if [ "$rc" = 124 ]; then
  echo "the jobs did not finish within ${timeout_s}s (HOPWISE_SWEEP_CHECK_TIMEOUT); the queue:" >&2
  squeue -o '%.12i %.16j %.10T %.20r' >&2 || true
  false
fi
[ "$rc" = 0 ] || { echo "$plan/slurm/submit.sh --wait exited with status $rc" >&2; false; }
echo "   ($(since "$t") s)"

step "every shard done"
for ((i = 0; i < shards; i++)); do
  test -s "$plan/shards/$i-of-$shards.done.json" || { echo "no done record for shard $i of $shards" >&2; false; }
  ls "$plan"/slurm/logs/[0-9]*_"$i".out >/dev/null 2>&1 || { echo "no Slurm log for array task $i in $plan/slurm/logs" >&2; false; }
done
"$hw" sweep status "$plan"

step "one machine: hopwise ${sweep[*]} --out $one"
t=$(now)
"$hw" "${sweep[@]}" --out "$one" --quiet
echo "   ($(since "$t") s)"

step "compare the merged results with the one-machine sweep's"
# Wall-clock fields are the only ones allowed to differ.
normalise() {
  case "$(basename "$1")" in
    summary.json) grep -v '^  "wall_s": ' "$1" ;;
    report.html) sed -E 's/[0-9]+(\.[0-9]+)? s wall/(wall time) s wall/g' "$1" ;;
    *) cat "$1" ;;
  esac
}
bad=0
n=0
for f in "$one"/*; do
  [ -f "$f" ] || continue
  name=$(basename "$f")
  n=$((n + 1))
  if [ ! -f "$plan/$name" ]; then
    echo "   $name: missing from the merged results in $plan"
    bad=1
  elif cmp -s <(normalise "$f") <(normalise "$plan/$name"); then
    echo "   $name: same"
  else
    echo "   $name: DIFFERS (< one machine, > merged; first lines):"
    diff <(normalise "$f") <(normalise "$plan/$name") | head -n 20 || true
    bad=1
  fi
done
[ "$n" -gt 0 ] || { echo "the one-machine sweep wrote nothing in $one" >&2; false; }
[ "$bad" = 0 ] || false

trap - ERR
if [ -z "$keep" ]; then rm -rf "$work"; fi
echo "sweep-check passed: $shards Slurm shards merged equal the one-machine sweep ($n files; $(since "$t_all") s in all)"
