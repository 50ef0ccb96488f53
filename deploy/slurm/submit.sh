#!/bin/bash
# Runs `tcpfec reproduce EXPERIMENT` as an array of N shards and merges them when all
# have succeeded:  deploy/slurm/submit.sh teshima 8
# Run it from a directory shared by the nodes (results/ is written there). For an
# experiment file rather than a built-in id, pass its path and the id it declares.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
experiment=${1:?usage: submit.sh EXPERIMENT SHARDS [ID]}
shards=${2:?usage: submit.sh EXPERIMENT SHARDS [ID]}
id=${3:-$experiment}
array=$(sbatch --parsable --array=1-"$shards" "$here/reproduce.sbatch" "$experiment")
sbatch --dependency=afterok:"$array" "$here/merge.sbatch" results/"$id"
