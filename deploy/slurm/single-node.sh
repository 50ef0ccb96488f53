#!/bin/bash
# Installs and starts a one-node Slurm on this Debian machine (as root), enough to run
# the job-array recipes and the `sbatch` integration test (`cargo test --test slurm`):
#   sudo deploy/slurm/single-node.sh
# It writes /etc/slurm/slurm.conf for this host alone, so do not run it on a machine that
# is part of a real cluster.
set -euo pipefail
if [ "$(id -u)" != 0 ]; then
    echo "single-node.sh: run as root (it installs packages and starts daemons)" >&2
    exit 1
fi
if ! command -v slurmctld >/dev/null || ! command -v munged >/dev/null; then
    apt-get update -q
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q slurm-wlm munge
fi
host=$(hostname -s)
cpus=$(nproc)
mem=$(awk '/MemTotal/ { print int($2 / 1024 * 0.9) }' /proc/meminfo)
mkdir -p /var/spool/slurmctld /var/spool/slurmd /var/log/slurm /run/munge
chown slurm: /var/spool/slurmctld /var/log/slurm 2>/dev/null || true
cat > /etc/slurm/slurm.conf <<CONF
ClusterName=tcpfec-local
SlurmctldHost=$host
SlurmUser=root
AuthType=auth/munge
StateSaveLocation=/var/spool/slurmctld
SlurmdSpoolDir=/var/spool/slurmd
SlurmctldLogFile=/var/log/slurm/slurmctld.log
SlurmdLogFile=/var/log/slurm/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=2
NodeName=$host CPUs=$cpus RealMemory=$mem State=UNKNOWN
PartitionName=local Nodes=$host Default=YES MaxTime=INFINITE State=UP
CONF
# munge needs a key readable only by its user.
if [ ! -s /etc/munge/munge.key ]; then
    dd if=/dev/urandom bs=1 count=1024 of=/etc/munge/munge.key 2>/dev/null
fi
chown munge: /etc/munge/munge.key /run/munge 2>/dev/null || true
chmod 400 /etc/munge/munge.key
pgrep -x munged >/dev/null || runuser -u munge -- /usr/sbin/munged
pgrep -x slurmctld >/dev/null || /usr/sbin/slurmctld
pgrep -x slurmd >/dev/null || /usr/sbin/slurmd
for _ in $(seq 30); do
    if sinfo -h -o %T 2>/dev/null | grep -qE 'idle|mixed|allocated'; then
        sinfo
        exit 0
    fi
    sleep 1
done
echo "single-node.sh: the node did not come up; see /var/log/slurm/" >&2
exit 1
