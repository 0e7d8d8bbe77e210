#!/usr/bin/env bash
# The echo benchmark targets measured side by side in one `ringside run`: ringside's io_uring
# and epoll servers, tokio and monoio, and the plain C reference servers (benches/reference,
# liburing) as external contenders, all under the same load generator and pinning.
#
# Usage: benches/echo_side_by_side.sh [RUNS] [OUT_DIR]     (default 5 runs, /tmp/echo-sbs)
# Env: WORKLOAD (default echo.conns; echo.rate compares the servers at equal offered load),
#      MODELS (ringside models, comma-separated; default: the io_uring rows but SQPOLL, whose
#      poller would share the load generator's CPU, both epoll rows, tokio and monoio).
# Needs gcc and liburing-dev for the C servers. Prints ringside's tables; results, report.md
# and report.html land in OUT_DIR. Nothing is asserted: the figures are printed.
set -euo pipefail
RUNS=${1:-5}
OUT=${2:-/tmp/echo-sbs}
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
ref=$(mktemp -d /tmp/ringside-ref.XXXXXX)
trap 'rm -rf "$ref"' EXIT
"$here/reference/build.sh" "$ref" >/dev/null
RS=${RINGSIDE:-$repo/target/release/ringside}
[ -x "$RS" ] || { echo "build ringside first: cargo build --release" >&2; exit 1; }
# A copy: a rebuild during the run must not replace the binary its server children exec.
cp "$RS" "$ref/ringside"
rm -rf "$OUT"
"$ref/ringside" run ${WORKLOAD:-echo.conns} --runs "$RUNS" --quiet --out "$OUT" \
    --models ${MODELS:-uring,uring-defer,uring-fixed,uring-multishot,uring-tuned,epoll-lt,epoll-et,tokio,monoio} \
    --contender "echo:c-epoll=$ref/echo_epoll {port}" \
    --contender "echo:c-uring=$ref/echo_uring {port}"
