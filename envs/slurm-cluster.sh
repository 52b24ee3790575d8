#!/usr/bin/env bash
# A real one-node SLURM cluster on this machine, for the tests (tests/test_slurm.py): munged,
# MariaDB and slurmdbd (the executor plugin tracks jobs with sacct, which needs accounting),
# slurmctld and slurmd. No systemd: this script starts each daemon and stops it by its pid.
# Needs root and Debian's packages (bash envs/setup.sh --slurm installs them).
#   bash envs/slurm-cluster.sh start    # then: sbatch --account=rmbench --partition=rmbench ...
#   bash envs/slurm-cluster.sh stop
# The config sits at the default paths (/etc/slurm): the executor's job steps clear SLURM_*
# variables, so an srun inside a job could not find a config given by SLURM_CONF.
set -euo pipefail
STATE=${RMBENCH_SLURM_STATE:-/tmp/rmbench-slurm}
CLUSTER=rmbench ACCOUNT=rmbench PARTITION=rmbench
DB_PORT=${RMBENCH_SLURM_DB_PORT:-3307}

say() { echo "slurm-cluster: $*" >&2; }
die() { say "$*"; exit 1; }

# Waits up to $1 seconds for a command to succeed.
wait_for() {
    local seconds=$1; shift
    for _ in $(seq $((seconds * 5))); do "$@" > /dev/null 2>&1 && return 0; sleep 0.2; done
    return 1
}

start_daemon() {  # name, pid file, command...
    local name=$1 pidfile=$2; shift 2
    "$@" || die "$name did not start: see $STATE/log/$name.log"
    wait_for 20 test -s "$pidfile" || die "$name wrote no pid file ($pidfile): see $STATE/log/$name.log"
}

write_configs() {
    local node
    node=$(slurmd -C | head -1)  # this machine's name, real cores and memory
    mkdir -p /etc/slurm
    cat > /etc/slurm/slurm.conf <<EOF
# Written by envs/slurm-cluster.sh: a one-node cluster for the tests.
ClusterName=$CLUSTER
SlurmctldHost=$(hostname -s)
SlurmUser=root
AuthType=auth/munge
StateSaveLocation=$STATE/slurmctld
SlurmdSpoolDir=$STATE/slurmd
SlurmctldPidFile=$STATE/run/slurmctld.pid
SlurmdPidFile=$STATE/run/slurmd.pid
SlurmctldLogFile=$STATE/log/slurmctld.log
SlurmdLogFile=$STATE/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
ReturnToService=2
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=localhost
AccountingStorageEnforce=associations
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
MinJobAge=300
$node State=UNKNOWN
PartitionName=$PARTITION Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
    cat > /etc/slurm/slurmdbd.conf <<EOF
# Written by envs/slurm-cluster.sh.
AuthType=auth/munge
DbdHost=localhost
SlurmUser=root
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort=$DB_PORT
StorageUser=slurm
StoragePass=slurm
StorageLoc=slurm_acct_db
LogFile=$STATE/log/slurmdbd.log
PidFile=$STATE/run/slurmdbd.pid
EOF
    chmod 600 /etc/slurm/slurmdbd.conf
}

start() {
    [ "$(id -u)" = 0 ] || die "needs root (the daemons and /etc/slurm)"
    for tool in munged mariadbd mariadb-install-db slurmdbd slurmctld slurmd sacctmgr; do
        command -v "$tool" > /dev/null || die "$tool not found: bash envs/setup.sh --slurm installs SLURM"
    done
    if [ -s "$STATE/run/slurmctld.pid" ] && kill -0 "$(cat "$STATE/run/slurmctld.pid")" 2> /dev/null; then
        say "already running ($STATE)"; return 0
    fi
    rm -rf "$STATE"
    # each daemon's own folder where it runs as its own user
    mkdir -p "$STATE"/{log,run,slurmctld,slurmd,db,munge} /run/munge
    chown munge:munge /run/munge "$STATE/munge"
    chown mysql:mysql "$STATE/db"
    write_configs

    say "munged"
    runuser -u munge -- /usr/sbin/munged --pid-file="$STATE/munge/munged.pid" --log-file="$STATE/munge/munged.log" \
        || die "munged did not start: see $STATE/munge/munged.log"

    say "MariaDB on 127.0.0.1:$DB_PORT (accounting)"
    mariadb-install-db --user=mysql --datadir="$STATE/db/data" --skip-test-db > "$STATE/log/mariadb-install.log" 2>&1 \
        || die "mariadb-install-db failed: see $STATE/log/mariadb-install.log"
    mariadbd --user=mysql --datadir="$STATE/db/data" --socket="$STATE/db/mysql.sock" \
        --bind-address=127.0.0.1 --port="$DB_PORT" --pid-file="$STATE/db/mariadbd.pid" \
        --skip-log-bin --innodb-buffer-pool-size=64M > "$STATE/log/mariadbd.log" 2>&1 &
    wait_for 30 mariadb --socket="$STATE/db/mysql.sock" -u root -e "select 1" \
        || die "MariaDB did not answer: see $STATE/log/mariadbd.log"
    mariadb --socket="$STATE/db/mysql.sock" -u root -e \
        "CREATE USER 'slurm'@'localhost' IDENTIFIED BY 'slurm'; CREATE USER 'slurm'@'127.0.0.1' IDENTIFIED BY 'slurm';
         GRANT ALL ON slurm_acct_db.* TO 'slurm'@'localhost'; GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1';"

    say "slurmdbd"
    start_daemon slurmdbd "$STATE/run/slurmdbd.pid" slurmdbd
    wait_for 30 sacctmgr -n list cluster || die "slurmdbd did not answer: see $STATE/log/slurmdbd.log"
    sacctmgr -i add cluster "$CLUSTER" > /dev/null
    sacctmgr -i add account "$ACCOUNT" cluster="$CLUSTER" description=tests organization=rmbench > /dev/null
    sacctmgr -i add user "$(id -un)" account="$ACCOUNT" cluster="$CLUSTER" > /dev/null

    say "slurmctld and slurmd"
    start_daemon slurmctld "$STATE/run/slurmctld.pid" slurmctld
    start_daemon slurmd "$STATE/run/slurmd.pid" slurmd
    wait_for 60 sh -c "sinfo -h -o %t | grep -qx idle" \
        || die "the node is not idle: $(sinfo -h -o '%t %E' 2>&1); see $STATE/log/slurmctld.log"
    say "up: cluster $CLUSTER, account $ACCOUNT, partition $PARTITION ($(sinfo -h -o '%c CPUs, %m MB'))"
}

stop() {
    local name pid pids=()
    # All at once: each daemon takes 1-2 s to stop, and nothing of this cluster's state is kept.
    for name in run/slurmd run/slurmctld run/slurmdbd db/mariadbd munge/munged; do
        [ -s "$STATE/$name.pid" ] || continue
        pid=$(cat "$STATE/$name.pid")
        kill "$pid" 2> /dev/null && pids+=("$pid")
    done
    for pid in "${pids[@]}"; do
        wait_for 20 sh -c "! kill -0 $pid" || kill -9 "$pid" 2> /dev/null || true
    done
    # A config naming a controller that is gone makes every SLURM client wait for it: scontrol,
    # which Snakemake's SLURM plugin calls whenever Snakemake starts, waits 9 s.
    grep -qs "Written by envs/slurm-cluster.sh" /etc/slurm/slurm.conf && rm -f /etc/slurm/slurm.conf /etc/slurm/slurmdbd.conf
    say "stopped"
}

case "${1:-}" in
    start) start ;;
    stop) stop ;;
    *) die "usage: $0 start|stop" ;;
esac
