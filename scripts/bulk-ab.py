#!/usr/bin/env python3
"""Alternated A/B rounds of the bulk path, each process's CPU measured apart.

Each round starts, for each binary directory in turn, a fresh `meridian-server` (its own store) and a
`meridian watch Bench --format jsonl`, then applies --applies files of --rows new insert lines one after the other
(into the empty watcher, then into the rows it shows). For every apply it prints: the milliseconds until the watcher
had printed every row, until `meridian apply` exited, the server's and the watcher's CPU over that time (from
/proc/PID/task/*/schedstat, every thread), the CPU of `meridian apply` (its rusage) and the server's minor faults so
far. Then the medians, and with two directories the medians of the paired differences (second minus first) with how
many rounds the second was lower in.

    swift build -c release --product meridian-server && swift build -c release --product meridian
    mkdir -p /tmp/A && cp .build/release/meridian .build/release/meridian-server /tmp/A/
    # ... make the change, build again, copy to /tmp/B the same way, then:
    scripts/bulk-ab.py --rounds 8 /tmp/A /tmp/B

Only ratios and paired differences from one run mean anything on a shared machine (docs/speed-of-light.md).
"""
import argparse, os, shutil, statistics, subprocess, sys, tempfile, threading, time

SCHEMA = """version: 1
entities:
  Bench:
    id: client
    attributes:
      title: string
      stamp: int
      qty: int
"""
PATTERN = b'"op":"insert"'


def cpu_ms(pid):
    """CPU time of every thread of `pid`, in ms."""
    total = 0
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                total += int(f.read().split()[0])
        except OSError:
            pass  # the thread ended meanwhile
    return total / 1e6


def minor_faults(pid):
    with open(f"/proc/{pid}/stat") as f:
        return int(f.read().rsplit(")", 1)[1].split()[7])


def read_line(fd, buffer):
    while b"\n" not in buffer[0]:
        data = os.read(fd, 65536)
        if not data:
            raise RuntimeError("the process ended before its first line")
        buffer[0] += data
    line, buffer[0] = buffer[0].split(b"\n", 1)
    return line


def one_side(directory, files, rows, work):
    """One round for one binary directory: a row per apply."""
    store = tempfile.mkdtemp(dir=work)
    server = subprocess.Popen(
        [f"{directory}/meridian-server", "--db", f"{store}/store.sqlite", "--schema", f"{work}/bench.yaml",
         "--listen", "127.0.0.1:0", "--log-level", "warning"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    watch = None
    try:
        first = read_line(server.stdout.fileno(), [b""]).decode()
        if not first.startswith("listening on "):
            raise RuntimeError(f"meridian-server said {first!r}")
        address = first[len("listening on "):]
        watch = subprocess.Popen([f"{directory}/meridian", "watch", "Bench", "--format", "jsonl", "--server", address],
                                 stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        buffer = [b""]
        if b'"event":"snapshot"' not in read_line(watch.stdout.fileno(), buffer):
            raise RuntimeError("meridian watch did not print its snapshot first")
        carry = buffer[0]
        results = []
        for path in files:
            time.sleep(0.3)
            server_before, watch_before = cpu_ms(server.pid), cpu_ms(watch.pid)
            start = time.monotonic()
            apply = subprocess.Popen([f"{directory}/meridian", "apply", path, "--server", address],
                                     stdout=subprocess.DEVNULL)
            exited = {}

            def wait():
                _, status, usage = os.wait4(apply.pid, 0)
                exited.update(seconds=time.monotonic() - start, status=status, usage=usage)

            waiter = threading.Thread(target=wait)
            waiter.start()
            seen, tail = carry.count(PATTERN), carry[-(len(PATTERN) - 1):]
            while seen < rows:
                data = os.read(watch.stdout.fileno(), 1 << 20)
                if not data:
                    raise RuntimeError(f"meridian watch ended after {seen} of {rows} rows")
                joined = tail + data
                seen += joined.count(PATTERN)
                tail = joined[-(len(PATTERN) - 1):]
            wall = time.monotonic() - start
            waiter.join()
            carry = b""
            if exited["status"] != 0:
                raise RuntimeError(f"meridian apply {path} failed")
            usage = exited["usage"]
            results.append((wall * 1000, exited["seconds"] * 1000, cpu_ms(server.pid) - server_before,
                            cpu_ms(watch.pid) - watch_before, (usage.ru_utime + usage.ru_stime) * 1000,
                            minor_faults(server.pid)))
        return results
    finally:
        for process in (watch, server):
            if process:
                process.terminate()
                process.wait()
        shutil.rmtree(store, ignore_errors=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("directories", nargs="+", help="directories holding meridian and meridian-server")
    parser.add_argument("--rounds", type=int, default=5, help="rounds, each binary directory once a round (5)")
    parser.add_argument("--rows", type=int, default=20_000, help="insert lines a file (20000)")
    parser.add_argument("--applies", type=int, default=2, help="files applied one after another a round (2)")
    arguments = parser.parse_args()
    for directory in arguments.directories:
        for name in ("meridian", "meridian-server"):
            if not os.access(f"{directory}/{name}", os.X_OK):
                parser.error(f"{directory}/{name} is missing or not executable")
    if arguments.rounds < 1 or arguments.rows < 1 or arguments.applies < 1:
        parser.error("--rounds, --rows and --applies must be at least 1")
    work = tempfile.mkdtemp(prefix="meridian-bulk-ab-")
    try:
        with open(f"{work}/bench.yaml", "w") as f:
            f.write(SCHEMA)
        files = []
        for n in range(arguments.applies):
            path = f"{work}/apply{n + 1}.jsonl"
            with open(path, "w") as f:
                for r in range(arguments.rows):
                    f.write('{"op":"insert","entity":"Bench","id":"r%d-%d","values":{"title":"row %d","stamp":%d,'
                            '"qty":%d}}\n' % (r, n, r, r, r % 100))
            files.append(path)
        columns = ("until watch printed", "apply exited", "server CPU", "watch CPU", "apply CPU")
        results = {d: [[] for _ in files] for d in arguments.directories}
        for round_ in range(arguments.rounds):
            for directory in arguments.directories:
                for i, row in enumerate(one_side(directory, files, arguments.rows, work)):
                    results[directory][i].append(row)
                    print(f"round {round_ + 1} {directory} apply {i + 1}: " +
                          ", ".join(f"{name} {value:.0f} ms" for name, value in zip(columns, row)) +
                          f", server faults {row[5]}", flush=True)
        print("medians (ms): " + ", ".join(columns))
        for directory in arguments.directories:
            for i in range(len(files)):
                values = list(zip(*results[directory][i]))
                print(f"{directory} apply {i + 1}: " + " / ".join(f"{statistics.median(v):.0f}" for v in values[:5]))
        if len(arguments.directories) == 2:
            first, second = arguments.directories
            print(f"paired differences, {second} minus {first} (ms; rounds where {second} was lower):")
            for i in range(len(files)):
                pairs = list(zip(results[first][i], results[second][i]))
                cells = []
                for c in range(5):
                    d = [b[c] - a[c] for a, b in pairs]
                    cells.append(f"{statistics.median(d):+.0f} ({sum(1 for x in d if x < 0)}/{len(d)})")
                print(f"apply {i + 1}: " + " / ".join(cells))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    try:
        main()
    except RuntimeError as error:
        print(f"bulk-ab: {error}", file=sys.stderr)
        sys.exit(1)
