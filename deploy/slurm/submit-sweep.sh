#!/bin/bash
# Runs a `tcpfec sim` sweep as an array of N shards and merges them into DIR when all
# have succeeded:  deploy/slurm/submit-sweep.sh my-sweep.toml 16 results/my-sweep
# DIR must be on storage every node shares; extra arguments go to `tcpfec sim`.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
usage="usage: submit-sweep.sh SETTINGS.toml SHARDS DIR [sim flags]"
settings=${1:?$usage}
shards=${2:?$usage}
dir=${3:?$usage}
shift 3
array=$(sbatch --parsable --array=1-"$shards" "$here/sweep.sbatch" "$settings" "$dir" "$@")
sbatch --dependency=afterok:"$array" "$here/merge.sbatch" "$dir"
