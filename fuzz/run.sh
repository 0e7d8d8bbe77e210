#!/usr/bin/env bash
# Fuzzes the HTTP request parser and response reader for SECONDS each (libFuzzer through
# cargo-fuzz). Exit 0: no crash. Non-zero: a crash (the input is saved under
# fuzz/artifacts/<target>/) or a build failure. Prints "skipped: <why>" and exits 0 only when
# cargo-fuzz or libFuzzer truly cannot be installed or built on this machine.
#
# Works with only a stable toolchain: cargo-fuzz needs nightly flags (-Z, sancov passes), so
# without a nightly toolchain the build runs on stable with RUSTC_BOOTSTRAP=1 and without a
# sanitizer (--sanitizer none: libFuzzer still guides by coverage and catches panics, which
# is what safe Rust fails with). With nightly installed, AddressSanitizer is used too
# (FUZZ_NIGHTLY=0 forces the stable path).
set -uo pipefail

secs=${1:-}
if ! [[ "$secs" =~ ^[0-9]+$ ]] || [ "$secs" -lt 1 ]; then
    echo "usage: fuzz/run.sh SECONDS (whole seconds per target, >= 1)" >&2
    exit 2
fi
cd "$(dirname "$0")" || exit 1
targets=(http_request http_response)

if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "installing cargo-fuzz..."
    if ! cargo install cargo-fuzz --locked; then
        echo "skipped: cargo-fuzz could not be installed (cargo install cargo-fuzz failed)"
        exit 0
    fi
fi
if ! command -v c++ >/dev/null 2>&1 && ! command -v clang++ >/dev/null 2>&1; then
    echo "skipped: no C++ compiler to build libFuzzer (install g++ or clang)"
    exit 0
fi

toolchain=()
sanitizer=none
if [ "${FUZZ_NIGHTLY:-1}" != 0 ] && rustup run nightly rustc --version >/dev/null 2>&1; then
    toolchain=(+nightly)
    sanitizer=address
else
    export RUSTC_BOOTSTRAP=1
fi
echo "fuzzing with $(rustc "${toolchain[@]}" --version), sanitizer $sanitizer, ${secs} s per target"

for t in "${targets[@]}"; do
    if ! cargo "${toolchain[@]}" fuzz build --release --sanitizer "$sanitizer" "$t"; then
        echo "error: building fuzz target $t failed" >&2
        exit 1
    fi
done
status=0
for t in "${targets[@]}"; do
    mkdir -p "corpus/$t"
    echo "== $t: ${secs} s"
    if ! cargo "${toolchain[@]}" fuzz run --release --sanitizer "$sanitizer" "$t" \
        "corpus/$t" "seeds/$t" -- -max_total_time="$secs" -print_final_stats=1; then
        echo "error: fuzz target $t crashed; the input is under fuzz/artifacts/$t/" >&2
        status=1
    fi
done
exit $status
