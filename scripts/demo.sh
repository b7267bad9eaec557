#!/usr/bin/env bash
# The Meridian demo: a server on an embedded SQLite file, a few thousand places in central Lisbon, a writer that
# moves, renames, adds and deletes them a few times a second, and a live view.
#
#   scripts/demo.sh                      build, start everything, show a live `meridian watch` (Ctrl-C stops all)
#   scripts/demo.sh --duration 30        stop by itself after 30 seconds (works without a terminal)
#
# Options:
#   --duration SECONDS   stop after this long (default: until Ctrl-C, SIGINT or SIGTERM)
#   --points N           how many places to load (default 3000)
#   --rate N             writer transactions per second, roughly (default 4)
#   --port PORT          the server's port (default 7400; 0 picks a free one)
#   --admin-port PORT    the server's admin endpoint and status page (default: the port after --port, 7401; with
#                        --port 0, a free one)
#   --data DIR           where the store, logs and the watch stream go (default ./data)
#   --view table|jsonl|none   what to show: the live table (default on a terminal), the JSON-lines stream, or
#                        nothing but instructions (default without a terminal; the stream still goes to DIR/watch.jsonl)
#   --no-build           use the binaries already built
#   --bin DIR            use meridian-server and meridian from DIR (implies --no-build; runs no swift command)
#   --users              two users who see different places: the server verifies tokens and serves
#                        Schemas/demo-users.yaml, whose rules give alice cafés and restaurants (categories 0, 1) and
#                        bob museums, shops and gardens (2, 3, 4); the live view is alice's (DIR/watch.jsonl; bob's is in
#                        DIR/watch-bob.jsonl, and the instructions show how to watch as either)
#
# Everything it starts (server, writer, watchers) is stopped when it exits, however it exits.
set -euo pipefail
cd "$(dirname "$0")/.."

duration=""
points=3000
rate=4
port=7400
admin_port=""
data=./data
view=""
build=1
bin=""
users=0
while [ $# -gt 0 ]; do
    case "$1" in
        --duration) duration="$2"; shift 2 ;;
        --points) points="$2"; shift 2 ;;
        --rate) rate="$2"; shift 2 ;;
        --port) port="$2"; shift 2 ;;
        --admin-port) admin_port="$2"; shift 2 ;;
        --data) data="$2"; shift 2 ;;
        --view) view="$2"; shift 2 ;;
        --no-build) build=0; shift ;;
        --bin) bin="$2"; build=0; shift 2 ;;
        --users) users=1; shift ;;
        -h|--help) awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0"; exit 0 ;;
        *) echo "demo: unknown option '$1' (try --help)" >&2; exit 2 ;;
    esac
done
if [ -z "$admin_port" ]; then
    if [ "$port" = 0 ]; then admin_port=0; else admin_port=$((port + 1)); fi
fi
if [ -z "$view" ]; then
    if [ -t 1 ]; then view=table; else view=none; fi
fi
case "$view" in table|jsonl|none) ;; *) echo "demo: --view must be table, jsonl or none" >&2; exit 2 ;; esac

log() { printf '==> %s\n' "$*" >&2; }

if [ "$build" = 1 ]; then
    log "building meridian-server and meridian"
    swift build --product meridian-server >&2
    swift build --product meridian >&2
fi
[ -n "$bin" ] || bin="$(swift build --show-bin-path)"
bin="$(cd "$bin" && pwd)"
server_bin="$bin/meridian-server"
meridian="$bin/meridian"
for b in "$server_bin" "$meridian"; do
    [ -x "$b" ] || { echo "demo: $b is missing; run without --no-build" >&2; exit 1; }
done

mkdir -p "$data"
data="$(cd "$data" && pwd)"
db="$data/demo.sqlite"
rm -f "$db" "$db-wal" "$db-shm" "$data/watch.jsonl" "$data/watch-bob.jsonl" "$data/writer.log"

# ---- cleanup: stop what we started, by pid, newest first ----
# Each is sent SIGTERM and given 15 s to exit (the server's graceful shutdown, given 5 s below, is the longest);
# whatever still runs then is killed and named, so that the demo always ends.
pids=()
names=()
started() { pids+=("$1"); names+=("$2"); }
cleanup() {
    local status=$?
    trap - EXIT INT TERM
    for ((i = ${#pids[@]} - 1; i >= 0; i--)); do
        kill -TERM "${pids[$i]}" 2>/dev/null || true
    done
    local waited=0 running
    while [ "$waited" -lt 150 ]; do
        running=0
        for pid in ${pids[@]+"${pids[@]}"}; do kill -0 "$pid" 2>/dev/null && running=1; done
        [ "$running" = 0 ] && break
        sleep 0.1
        waited=$((waited + 1))
    done
    for ((i = 0; i < ${#pids[@]}; i++)); do
        if kill -0 "${pids[$i]}" 2>/dev/null; then
            echo "demo: ${names[$i]} (pid ${pids[$i]}) did not stop within 15 s of SIGTERM; killed" >&2
            kill -KILL "${pids[$i]}" 2>/dev/null || true
            [ "$status" = 0 ] && status=1
        fi
        wait "${pids[$i]}" 2>/dev/null || true
    done
    [ -n "${tty_state:-}" ] && stty "$tty_state" 2>/dev/null || true
    exit "$status"
}
trap cleanup EXIT
trap 'exit 0' INT TERM

# ---- identities (--users): an HS256 secret, and a token for the writer, alice and bob ----
schema=Schemas/demo.yaml
server_args=()
if [ "$users" = 1 ]; then
    schema=Schemas/demo-users.yaml
    secret="$data/demo.secret"
    (umask 077 && head -c 48 /dev/urandom | base64 | tr -d '\n=' >"$secret")
    issue() { "$meridian" token issue --key "$secret" --sub "$1" --claim "categories=$2" --ttl 12h; }
    writer_token="$(issue demo-writer '[0,1,2,3,4,5]')"
    alice_token="$(issue alice '[0,1]')"
    bob_token="$(issue bob '[2,3,4]')"
    server_args=(--auth jwt --jwt-key "$secret")
    # The loader and the writer write as the demo's writer; the watchers below say who they are.
    export MERIDIAN_TOKEN="$writer_token"
    log "two users: alice sees categories 0 and 1, bob 2, 3 and 4 (tokens for 12 h, signed with $secret)"
fi

# ---- server ----
log "starting meridian-server on $db"
# The admin endpoint is on loopback: with --users (tokens), it needs a token of its own.
admin_args=(--admin "127.0.0.1:$admin_port")
if [ "$users" = 1 ]; then
    (umask 077 && head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$data/admin-token")
    admin_args+=(--admin-token-file "$data/admin-token")
fi
"$server_bin" --db "$db" --schema "$schema" --listen "127.0.0.1:$port" "${admin_args[@]}" \
    --shutdown-timeout 5s ${server_args[@]+"${server_args[@]}"} >"$data/server.out" 2>"$data/server.log" &
started $! meridian-server
address=""
status_page=""
for _ in $(seq 1 200); do
    address="$(sed -n 's/^listening on \(.*\)$/\1/p' "$data/server.out" | head -n 1)"
    status_page="$(sed -n 's/^admin on \(.*\)$/\1/p' "$data/server.out" | head -n 1)"
    [ -n "$address" ] && [ -n "$status_page" ] && break
    kill -0 "${pids[0]}" 2>/dev/null || { cat "$data/server.log" >&2; echo "demo: the server did not start" >&2; exit 1; }
    sleep 0.05
done
[ -n "$address" ] || { echo "demo: the server did not say where it listens" >&2; exit 1; }
[ -n "$status_page" ] || { echo "demo: the server did not say where its status page is" >&2; exit 1; }
export MERIDIAN_SERVER="$address"
log "server listening on $address; status page at $status_page"

# ---- data: places spread over central Lisbon (lat 38.700–38.735, lon -9.165 – -9.120) ----
log "loading $points places"
awk -v n="$points" -v seed=7400 -f scripts/demo-places.awk -v mode=generate >"$data/places.csv"
"$meridian" import Point "$data/places.csv" --batch-size 1000 >&2

# ---- writer ----
log "starting the writer (~$rate transactions/s: moves, renames, inserts, deletes)"
awk -v mode=write -v seed="$RANDOM" -v rate="$rate" -v meridian="$meridian" -v errlog="$data/writer.log" \
    -f scripts/demo-places.awk "$data/places.csv" &
started $! "the writer"

# ---- what to type in another terminal ----
if [ "$users" = 1 ]; then
    tee "$data/instructions.txt" >&2 <<TEXT

  The demo is running with two users. In another terminal (the server is at $address):

    export MERIDIAN_SERVER=$address PATH="$bin:\$PATH"
    export ALICE='$alice_token'
    export BOB='$bob_token'
    meridian watch Point --sort category,title --section category --format table --token "\$ALICE"
    meridian watch Point --sort category,title --section category --format table --token "\$BOB"
    meridian query Point --where 'category == 2' --token "\$ALICE"       # nothing: not alice's
    meridian insert Point title='Museu Novo' category=2 --token "\$ALICE" # refused by the rules (exit 4)
    meridian map Point --lat latitude --lon longitude --title title --format ascii --token "\$BOB"

  A place the writer moves to another category leaves one view and enters the other at the same commit.

  The server's status page (clients, queues, lag, subscriptions; send the admin token):
    curl -H "Authorization: Bearer \$(cat $data/admin-token)" $status_page

TEXT
else
tee "$data/instructions.txt" >&2 <<TEXT

  The demo is running. In another terminal (the server is at $address):

    export MERIDIAN_SERVER=$address PATH="$bin:\$PATH"
    meridian watch Point --where 'category == 1' --sort title --format table
    meridian watch Point --sort category,title --section category --format jsonl
    meridian map Point --lat latitude --lon longitude --title title --format ascii
    meridian map Point --lat latitude --lon longitude --title title --region 38.705,-9.150,38.720,-9.130 --format jsonl
    meridian query Point --where 'title BEGINSWITH[cd] "cafe"' --sort -category,title --limit 10
    meridian insert Point title='Café Aurora' category=0 latitude=38.7139 longitude=-9.1394

  The server's status page (clients, queues, lag, subscriptions, the change rate): $status_page
  Its Prometheus metrics: ${status_page}metrics

TEXT
fi

# ---- the live view (alice's, with --users; bob's goes to a file) ----
watch_args=(watch Point --sort category,title --section category)
if [ "$users" = 1 ]; then
    "$meridian" "${watch_args[@]}" --format jsonl --token "$bob_token" >"$data/watch-bob.jsonl" 2>>"$data/writer.log" &
    started $! "bob's meridian watch"
    watch_args+=(--token "$alice_token")
fi
if [ "$view" = table ]; then
    [ -t 0 ] && tty_state="$(stty -g 2>/dev/null || true)"
    log "the live view starts in 5 s (these instructions are also in $data/instructions.txt)"
    sleep 5
    "$meridian" "${watch_args[@]}" --format table &
    started $! "meridian watch"
else
    "$meridian" "${watch_args[@]}" --format jsonl >"$data/watch.jsonl" 2>>"$data/writer.log" &
    started $! "meridian watch"
    if [ "$view" = jsonl ]; then
        tail -n +1 -f "$data/watch.jsonl" &
        started $! "the watch stream's tail"
    else
        log "watch stream: $data/watch.jsonl"
    fi
fi

if [ -n "$duration" ]; then
    log "stopping in $duration s; the status page is at $status_page"
    sleep "$duration" &
    wait $! || true
else
    log "Ctrl-C stops everything; the status page is at $status_page"
    while kill -0 "${pids[0]}" 2>/dev/null; do
        sleep 1 &
        wait $! || true
    done
    echo "demo: the server stopped; see $data/server.log" >&2
    exit 1
fi
