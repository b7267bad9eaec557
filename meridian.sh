#!/usr/bin/env bash
# Meridian's one entry script.
#   ./meridian.sh demo    install what is missing, build, run the demo
#   ./meridian.sh test    install what is missing, build, run every test
#   ./meridian.sh setup   only install what is missing
#   ./meridian.sh bench   build in release mode and run a benchmark (meridian-bench ARGS; `all`: every one, a table)
#   ./meridian.sh soak    build in release mode and run the consistency checker (meridian-check ARGS)
set -euo pipefail
cd "$(dirname "$0")"

# chromium: the admin status page's test renders it headless.
APT_PACKAGES=(libsqlite3-dev sqlite3 protobuf-compiler chromium)

log() { printf '==> %s\n' "$*" >&2; }

setup() {
    local missing=()
    for pkg in "${APT_PACKAGES[@]}"; do
        dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
    done
    if ((${#missing[@]})); then
        log "installing ${missing[*]}"
        local sudo=""
        [ "$(id -u)" -eq 0 ] || sudo="sudo"
        $sudo apt-get update
        DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y "${missing[@]}"
    fi
    python3 -c 'import grpc_tools' 2>/dev/null || {
        log "installing grpcio-tools (the Python client test generates a client from Protos/)"
        python3 -m pip install --quiet grpcio-tools==1.85.1
    }
    python3 -c 'import grpc_health.v1' 2>/dev/null || {
        log "installing grpcio-health-checking (a test checks the server's health service with it)"
        python3 -m pip install --quiet grpcio-health-checking==1.85.1
    }
    command -v swift >/dev/null || { echo "error: swift is not on PATH (expected Swift 6.1 or later)" >&2; exit 1; }
}

run_tests() {
    local security="AuthenticationTests|RulesServerTests|SecurityCommandTests|TLSCommandTests|CredentialsTests"
    # Every meridian-server a test starts stops when the test process that started it ends, even if that process
    # crashed or was killed before its own cleanup ran (docs/server.md).
    export MERIDIAN_EXIT_WITH_PARENT=1
    setup
    # The committed .swift-format, as scripts/format.sh applies it: a file that drifted fails here, in seconds.
    log "checking the formatting (scripts/format.sh --lint)"
    scripts/format.sh --lint
    log "building (debug, with tests)"
    swift build --build-tests
    # Separate runs: the multi-process checker soaks and the wire fuzzers start servers and processes of their own and
    # load both cores, and their deadlines, like the rest of the suite's (whose tests run in parallel), are meant
    # for a machine they do not share with each other.
    # The connection flood (10,000 sockets against a server process) takes both cores for a minute or two: beside the
    # parallel suite it starved other tests' servers past their deadlines (one-shot calls timed out in a full run).
    local flood="ProcessTests/silentConnections"
    # A query's patience with a silent server is a timer of seconds, tested against canned servers: in the parallel
    # run a loaded process stalled past it (a chunk written at once arrived more than a second later).
    # The connection limits' tests are timers of a few seconds too (a 3 s --idle-timeout, 1 s keepalives): in the
    # parallel run a loaded machine took longer than them between a connection's accept and its first call, five
    # times in a row (and once past the keepalive's retries).
    local patience="QueryChunkTests|ConnectionLimitTests"
    log "running every test but the checker soaks, the fuzzers, the security suites, the timers of seconds and the connection flood"
    test_run --skip "CheckerRunTests|MeridianFuzzTests|$security|$flood|$patience"
    log "running the connection flood"
    test_run --filter "$flood"
    # The security suites start servers with TLS and tokens that expire in seconds, and run openssl: a run of their
    # own keeps their clocks, and the main run's timing tests, off each other's load.
    log "running the security suites"
    test_run --filter "$security"
    log "running the timers of seconds (the query's patience, the connection limits)"
    test_run --filter "$patience"
    log "running the consistency checker soaks"
    test_run --filter "CheckerRunTests"
    log "running the fuzzers"
    test_run --filter "MeridianFuzzTests"
}

# One `swift test --skip-build` run; when it fails, its recorded issues are repeated at the end, where a CI log's
# tail shows them.
test_run() {
    local output status=0
    output="$(mktemp)"
    swift test --skip-build "$@" 2>&1 | tee "$output" || status=$?
    if [ "$status" -ne 0 ]; then
        log "FAILED (exit $status); the issues recorded:"
        grep -A4 -E 'recorded an issue|Test run .*failed|error:' "$output" | head -200 >&2 || true
    fi
    rm -f "$output"
    return "$status"
}

demo() {
    setup
    exec scripts/demo.sh "$@"
}

bench() {
    setup
    log "building benchmarks (release)"
    swift build -c release --product meridian-bench
    # `bench bulk` runs the server and the CLI as a user does: they are built beside it.
    swift build -c release --product meridian-server
    swift build -c release --product meridian
    local bin
    bin="$(swift build -c release --show-bin-path)"
    if [[ "${1:-}" == all ]]; then
        # Every benchmark, one Markdown table: printed, and kept beside the binaries.
        shift
        "$bin/meridian-bench" all --output "$bin/bench-all.md" "$@"
        log "the table is in $bin/bench-all.md"
    else
        "$bin/meridian-bench" "$@"
    fi
}

soak() {
    setup
    log "building the server and the consistency checker (release)"
    swift build -c release --product meridian-server
    swift build -c release --product meridian-check
    "$(swift build -c release --show-bin-path)/meridian-check" "$@"
}

cmd="${1:-help}"
shift || true
case "$cmd" in
    setup) setup ;;
    test) run_tests ;;
    demo) demo "$@" ;;
    bench) bench "$@" ;;
    soak) soak "$@" ;;
    *)
        sed -n '2,7p' "$0" | sed 's/^# \{0,1\}//'
        [ "$cmd" = help ] || exit 2
        ;;
esac
