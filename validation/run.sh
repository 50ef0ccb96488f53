#!/usr/bin/env bash
# Cross-checks tcpfec's TCP baselines against ns-2.35 and ns-3.37 (Debian packages) and
# writes docs/validation.md with tables and figures.
#   validation/run.sh            # full run, 10 seeds per point (about 30 minutes on 2 cores)
#   validation/run.sh --quick    # a few points, 2 seeds
set -euo pipefail
cd "$(dirname "$0")/.."
quick=()
seeds=10
if [ "${1:-}" = "--quick" ]; then quick=(--quick); seeds=2; fi

if ! command -v ns >/dev/null || [ ! -d /usr/include/ns3 ]; then
    echo "installing ns2 and libns3-dev (Debian packages)…"
    if [ "$(id -u)" -ne 0 ]; then sudo=sudo; else sudo=; fi
    $sudo apt-get update -q
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends ns2 libns3-dev
fi

mkdir -p validation/build
if [ ! -x validation/build/ns3-scenario ] || [ validation/ns3/scenario.cc -nt validation/build/ns3-scenario ]; then
    echo "building the ns-3 scenario…"
    libs=""
    for m in core network internet point-to-point applications traffic-control; do libs="$libs -lns3-$m"; done
    g++ -O2 -std=c++17 validation/ns3/scenario.cc -o validation/build/ns3-scenario $libs
fi

cargo build --release --quiet
./target/release/tcpfec validate --ns2 "$(command -v ns)" --ns3 validation/build/ns3-scenario \
    --seeds "$seeds" --out docs/validation "${quick[@]}" --report docs/validation.md
