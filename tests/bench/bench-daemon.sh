#!/bin/sh
# Runs the daemon benchmark on the release binaries and writes its section
# into BENCHMARKS.md between <!-- daemon:start --> and <!-- daemon:end -->,
# leaving the rest of the file (the memory benchmark's section) as it is.
# Arguments go to the bench: a part (`start`, `memory`, `appends`,
# `fanout`) or `quick`.
set -eu
cd "$(dirname "$0")/../.."

cargo build --release
output=$(cargo bench --bench daemon -- "$@")

section=$(mktemp)
trap 'rm -f "$section" "$section.md"' EXIT
{
    echo "<!-- daemon:start -->"
    echo "$output"
    echo
    echo "Commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown); $(rustc --version)."
    echo "<!-- daemon:end -->"
} >"$section"

if [ ! -f BENCHMARKS.md ]; then
    printf '# Benchmarks\n' >BENCHMARKS.md
fi
if grep -q '<!-- daemon:start -->' BENCHMARKS.md; then
    awk -v section="$section" '
        /<!-- daemon:start -->/ { while ((getline line < section) > 0) print line; skip = 1; next }
        /<!-- daemon:end -->/ { skip = 0; next }
        !skip { print }
    ' BENCHMARKS.md >"$section.md"
    cat "$section.md" >BENCHMARKS.md
else
    { echo; cat "$section"; } >>BENCHMARKS.md
fi
echo "wrote the daemon section of BENCHMARKS.md"
