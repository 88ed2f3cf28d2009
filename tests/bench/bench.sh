#!/bin/sh
# Runs the memory benchmark (`cargo bench --bench memory`) and writes its
# output into BENCHMARKS.md, with the machine, the date and the command.
set -eu
cd "$(dirname "$0")/../.."

command="cargo bench --bench memory"
output=$($command)
# The daemon benchmark's section (tests/bench/bench-daemon.sh) is kept as it is.
daemon=$(sed -n '/<!-- daemon:start -->/,/<!-- daemon:end -->/p' BENCHMARKS.md 2>/dev/null || true)

cpu=$(grep -m1 'model name' /proc/cpuinfo 2>/dev/null | cut -d: -f2 | sed 's/^ *//')
[ -n "$cpu" ] || cpu=$(sysctl -n machdep.cpu.brand_string 2>/dev/null || echo unknown)
cores=$(nproc 2>/dev/null || sysctl -n hw.ncpu 2>/dev/null || echo '?')

{
    echo "# Benchmarks"
    echo
    echo "Written by \`tests/bench/bench.sh\`; run it again rather than edit this file."
    echo
    echo "- Command: \`$command\`"
    echo "- Date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "- Machine: $cpu, $cores cores, $(uname -sm); $(rustc --version)"
    echo "- Commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
    echo
    echo "$output"
    if [ -n "$daemon" ]; then
        echo
        echo "$daemon"
    fi
} >BENCHMARKS.md
echo "wrote BENCHMARKS.md"
