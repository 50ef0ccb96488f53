#!/usr/bin/env bash
# Cross-checks tcpfec's TCP baselines against ns-2.35 and ns-3.37 (Debian packages) and
# writes docs/results/validation.md with tables and figures.
#   validation/run.sh            # full run, 10 seeds per point (about 30 minutes on 2 cores)
#   validation/run.sh --quick    # a few points, 2 seeds
#   validation/run.sh --bbr      # bbr1 and bbr against ns-3's TcpBbr, 3 seeds
#                                # (docs/results/validation-bbr.md; --bbr --quick for one point)
set -euo pipefail
cd "$(dirname "$0")/.."
quick=()
seeds=10
set_args=(--set baselines --out docs/results/validation --report docs/results/validation.md)
for arg in "$@"; do
    case "$arg" in
        --quick) quick=(--quick); seeds=2 ;;
        --bbr) set_args=(--set bbr --out docs/results/validation-bbr --report docs/results/validation-bbr.md); seeds=3 ;;
        *) echo "usage: validation/run.sh [--quick] [--bbr]" >&2; exit 2 ;;
    esac
done
if [ ${#quick[@]} -gt 0 ]; then seeds=2; fi

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
    --seeds "$seeds" "${set_args[@]}" "${quick[@]}"
