#!/bin/sh
# Runs the endless-conversation benchmark on the release binaries and
# writes its section into BENCHMARKS.md between <!-- endless:start --> and
# <!-- endless:end -->, leaving the rest of the file as it is. Arguments go
# to the bench: the sizes to build (10000 100000 1000000 when none).
set -eu
cd "$(dirname "$0")/../.."

cargo build --release
output=$(cargo bench --bench endless -- "$@")

section=$(mktemp)
trap 'rm -f "$section" "$section.md"' EXIT
{
    echo "<!-- endless:start -->"
    echo "## The endless conversation"
    echo
    echo "A release \`hearthd\` on synthetic histories built through the log's API"
    echo "(\`tests/bench/bench-endless.sh\`, \`tests/bench/endless.rs\`); each figure with its"
    echo "ratio to the first size's, measured in the same run."
    echo
    echo "$output"
    echo
    echo "Commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown); $(rustc --version); $(nproc) cores."
    echo "<!-- endless:end -->"
} >"$section"

if [ ! -f BENCHMARKS.md ]; then
    printf '# Benchmarks\n' >BENCHMARKS.md
fi
if grep -q '<!-- endless:start -->' BENCHMARKS.md; then
    awk -v section="$section" '
        /<!-- endless:start -->/ { while ((getline line < section) > 0) print line; skip = 1; next }
        /<!-- endless:end -->/ { skip = 0; next }
        !skip { print }
    ' BENCHMARKS.md >"$section.md"
    cat "$section.md" >BENCHMARKS.md
else
    { echo; cat "$section"; } >>BENCHMARKS.md
fi
echo "wrote the endless section of BENCHMARKS.md"
