#!/usr/bin/env bash
# Start a real single-node SLURM cluster (Slurm 22.05, Debian packages) on this machine.
# Needs root. Idempotent: a cluster that already answers sinfo is left alone.
set -euo pipefail

for tool in slurmctld slurmd munged sbatch; do
  command -v "$tool" >/dev/null || { echo "slurm: $tool not installed (apt-get install slurmctld slurmd slurm-client munge)" >&2; exit 1; }
done

node=$(hostname)
node_line=$(slurmd -C | head -n1)   # CPUs, sockets, cores, RealMemory of this machine
cpus=$(sed -E 's/.*CPUs=([0-9]+).*/\1/' <<<"$node_line")
mem=$(sed -E 's/.*RealMemory=([0-9]+).*/\1/' <<<"$node_line")
# Twice as many SLURM CPUs (and two GPU slots) as the machine has: the test's jobs spend most of
# their time starting Snakemake, and waiting for the head's status checks and for the scheduler,
# not computing, so twice as many overlap on the same cores.
slots=$((cpus * 2))

if sinfo -h >/dev/null 2>&1 && sinfo -h -o '%T' | grep -qE 'idle|mix|alloc' && sinfo -h -o '%G' | grep -q 'gpu:2' \
    && [ "$(sinfo -h -o '%c' | head -n1)" = "$slots" ]; then
  echo "slurm: cluster already up"; sinfo; exit 0
fi
# A cluster from an older configuration (other CPUs or GPU slots) is restarted with this one.
pkill -x slurmctld 2>/dev/null || true
pkill -x slurmd 2>/dev/null || true
for _ in $(seq 1 30); do pgrep -x slurmctld >/dev/null || pgrep -x slurmd >/dev/null || break; sleep 1; done

mkdir -p /etc/slurm /var/spool/slurmctld /var/spool/slurmd /var/log/slurm /run/munge /var/log/munge /var/lib/munge
cat > /etc/slurm/slurm.conf <<CONF
ClusterName=tokenmill
SlurmctldHost=${node}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
MpiDefault=pmi2
MinJobAge=600
ReturnToService=2
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
StateSaveLocation=/var/spool/slurmctld
SlurmdSpoolDir=/var/spool/slurmd
SlurmctldPidFile=/run/slurmctld.pid
SlurmdPidFile=/run/slurmd.pid
SlurmctldLogFile=/var/log/slurm/slurmctld.log
SlurmdLogFile=/var/log/slurm/slurmd.log
SchedulerType=sched/backfill
GresTypes=gpu
SlurmdParameters=config_overrides
NodeName=${node} CPUs=${slots} RealMemory=${mem} Gres=gpu:2 State=UNKNOWN
PartitionName=cpu Nodes=${node} Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO
PartitionName=gpu Nodes=${node} Default=NO MaxTime=INFINITE State=UP
CONF
# The node has no GPU: two gpu GRES bound to /dev/null and /dev/zero let jobs exercise the gpu partition and
# --gpus scheduling; the job itself finds no CUDA device and runs on the CPU.
cat > /etc/slurm/gres.conf <<CONF
AutoDetect=off
NodeName=${node} Name=gpu File=/dev/null
NodeName=${node} Name=gpu File=/dev/zero
CONF

[ -s /etc/munge/munge.key ] || dd if=/dev/urandom of=/etc/munge/munge.key bs=1024 count=1 status=none
chmod 400 /etc/munge/munge.key
pgrep -x munged >/dev/null || munged --force
pgrep -x slurmctld >/dev/null || slurmctld
pgrep -x slurmd >/dev/null || slurmd

for _ in $(seq 1 30); do
  # a node an earlier configuration drained (its registration was refused) is taken back
  if sinfo -h -o '%T' 2>/dev/null | grep -q drain; then
    scontrol update NodeName="${node}" State=RESUME >/dev/null 2>&1 || true
  fi
  if sinfo -h -o '%T' 2>/dev/null | grep -qE 'idle|mix|alloc'; then
    echo "slurm: cluster up on ${node} (${slots} SLURM CPUs on ${cpus} cores, ${mem} MB)"; sinfo; exit 0
  fi
  sleep 1
done
echo "slurm: cluster did not come up; slurmctld log tail:" >&2
tail -n 30 /var/log/slurm/slurmctld.log >&2 || true
exit 1
