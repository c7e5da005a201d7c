#!/usr/bin/env bash
# Fuzzing (not a test): the spec loader and the template parser under libFuzzer for a few
# minutes each (cargo fuzz, nightly).
#
#   bench/fuzz.sh [SECONDS_PER_TARGET]     default 120
#
# A crash is saved under fuzz/artifacts/<target>/ and the script exits 1; turn it into a
# regression test beside the code it broke. cargo-fuzz is installed once under ~/.cache/engine.
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_PER_TARGET="${1:-120}"
CARGO_FUZZ_VERSION=0.13.1
ROOT="$HOME/.cache/engine/cargo-fuzz-$CARGO_FUZZ_VERSION"
if [[ ! -x "$ROOT/bin/cargo-fuzz" ]]; then
    cargo install --locked --quiet cargo-fuzz --version "$CARGO_FUZZ_VERSION" --root "$ROOT"
fi
export PATH="$ROOT/bin:$PATH"
export CARGO_TARGET_DIR="$HOME/.cache/engine/target-fuzz"
mkdir -p "$CARGO_TARGET_DIR"
status=0
for target in spec_loader template_parser; do
    echo "fuzz: $target for ${SECONDS_PER_TARGET}s"
    log="$CARGO_TARGET_DIR/fuzz-$target.log"
    if (cd fuzz && cargo +nightly fuzz run "$target" -- -max_total_time="$SECONDS_PER_TARGET" \
        -max_len=4096 -rss_limit_mb=2048) >"$log" 2>&1; then
        grep -E "^Done [0-9]+ runs" "$log" | tail -1 || true
    else
        status=1
        grep -E "ERROR|SUMMARY|artifact|panicked" "$log" | head -10
    fi
done
exit $status
