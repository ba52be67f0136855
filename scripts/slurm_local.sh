#!/usr/bin/env bash
# A throwaway single-node SLURM cluster for testing gpubench under srun and sbatch, on one machine, as root.
#
#   scripts/slurm_local.sh start DIR   # writes DIR/slurm.conf, starts slurmctld and slurmd, waits until the node is idle
#   export SLURM_CONF=DIR/slurm.conf   # then srun / sbatch / squeue use it
#   scripts/slurm_local.sh stop DIR    # stops both daemons by the pids they wrote
#
# No munge: AuthType=auth/none and CredType=cred/none (Slurm 22.05, Debian 12's slurm-wlm), so nothing outside DIR
# is touched and no key is needed; never do this on a shared machine. Ports come from SLURM_LOCAL_PORT (default 16817,
# slurmd on the next one). Every daemon's pid is in DIR; `stop` kills exactly those.
set -euo pipefail
cmd="${1:?usage: slurm_local.sh start|stop DIR}"
dir="$(mkdir -p "${2:?usage: slurm_local.sh start|stop DIR}" && cd "$2" && pwd)"
port="${SLURM_LOCAL_PORT:-16817}"
host="$(hostname -s)"

stop() {
  local f pid
  for f in "$dir/slurmd.pid" "$dir/slurmctld.pid"; do
    [ -s "$f" ] || continue
    pid="$(cat "$f")"
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
    rm -f "$f"
  done
}

case "$cmd" in
  start)
    command -v slurmctld > /dev/null && command -v slurmd > /dev/null || { echo "slurm-wlm is not installed" >&2; exit 3; }
    mkdir -p "$dir/state" "$dir/spool"
    # The node's CPUs as slurmd counts them (the online ones): not nproc, which OMP_NUM_THREADS lowers (under
    # OMP_NUM_THREADS=1 a one-CPU node could never start the tests' two-task steps; srun queued them until timeout).
    cat > "$dir/slurm.conf" <<CONF
ClusterName=gpubench-test
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$port
SlurmdPort=$((port + 1))
AuthType=auth/none
CredType=cred/none
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SwitchType=switch/none
MpiDefault=none
ReturnToService=2
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
NodeName=$host NodeAddr=127.0.0.1 CPUs=$(getconf _NPROCESSORS_ONLN) State=UNKNOWN
PartitionName=test Nodes=$host Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE
CONF
    export SLURM_CONF="$dir/slurm.conf"
    trap 'stop' ERR
    slurmctld -i  # daemonises; writes its pid file
    slurmd
    for _ in $(seq 1 100); do
      if sinfo -h -o %t 2>/dev/null | grep -q '^idle'; then echo "$dir/slurm.conf"; exit 0; fi
      sleep 0.2
    done
    echo "the node never became idle; logs: $dir/slurmctld.log $dir/slurmd.log" >&2
    stop
    exit 1
    ;;
  stop) stop ;;
  *) echo "usage: slurm_local.sh start|stop DIR" >&2; exit 2 ;;
esac
