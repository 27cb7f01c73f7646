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

mkdir -p /etc/slurm /var/spool/slurmctld /var/spool/slurmd /var/log/slurm /run/munge /var/log/munge /var/lib/munge
conf=$(mktemp)
trap 'rm -f "$conf"' EXIT
cat > "$conf" <<CONF
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
# A test node's jobs are a chain of short ones (each starts Snakemake, works seconds, ends): a
# submitted job is not started at submission but by the next scheduling pass, and SLURM's
# defaults (backfill every 30 s, batch jobs deferred up to 3 s, the full pass once a minute) left
# it pending 1-3 s, and up to 9 s, with CPUs free, at each step of the chain (test_slurm: ~60 jobs).
# Here both passes run every second; a one-node queue of a few jobs costs them nothing.
SchedulerParameters=batch_sched_delay=0,sched_min_interval=0,sched_interval=1,bf_interval=1
GresTypes=gpu
SlurmdParameters=config_overrides
NodeName=${node} CPUs=${slots} RealMemory=${mem} Gres=gpu:2 State=UNKNOWN
PartitionName=cpu Nodes=${node} Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO
PartitionName=gpu Nodes=${node} Default=NO MaxTime=INFINITE State=UP
CONF

# A cluster up with this very configuration is left alone; one from an older configuration (other
# CPUs, GPU slots or scheduler settings) is restarted with this one.
if sinfo -h >/dev/null 2>&1 && sinfo -h -o '%T' | grep -qE 'idle|mix|alloc' && sinfo -h -o '%G' | grep -q 'gpu:2' \
    && [ "$(sinfo -h -o '%c' | head -n1)" = "$slots" ] && cmp -s "$conf" /etc/slurm/slurm.conf; then
  echo "slurm: cluster already up"; sinfo; exit 0
fi
pkill -x slurmctld 2>/dev/null || true
pkill -x slurmd 2>/dev/null || true
for _ in $(seq 1 30); do pgrep -x slurmctld >/dev/null || pgrep -x slurmd >/dev/null || break; sleep 1; done
cp "$conf" /etc/slurm/slurm.conf
chmod 644 /etc/slurm/slurm.conf
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
