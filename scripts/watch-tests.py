#!/usr/bin/env python3
"""Runs a test command and fails it when it stops making progress, instead of letting it hang or running it again.

    scripts/watch-tests.py LOG -- swift test [arguments]

The command's output goes to LOG (and nowhere else). Progress is any new line of output. When none has come for
HERALD_TEST_STALL_SECONDS (600 by default: a whole run takes 1-6 minutes on two shared cores, and no single test
takes more than a few), the watchdog prints, to its own standard output:
  - the tests that started and did not end (Swift Testing's and XCTest's lines in LOG),
  - the stack of every thread of every test process (gdb's `thread apply all bt`),
then kills the command's process group and exits 124, which fails CI. A hang is a bug to find, never a reason to run
the tests again: the stacks show which wait it was (docs/testing.md, "Debugging a hang").

Otherwise it exits with the command's own status.
"""

import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time


def unfinished_tests(log_path):
    """The tests LOG shows started but not ended, in the order they started."""
    started, ended = {}, set()
    with open(log_path, errors="replace") as log:
        for line in log:
            # Swift Testing: '◇ Test "name" started.', then '✔ Test "name" [with 2 test cases] passed after …',
            # '✘ … failed after …' or '➜ Test "name" skipped.' ('✘ Test "name" recorded an issue' is not its end).
            if (m := re.match(r'◇ Test (".*"|\S+) started', line)) and m.group(1) != "run":
                started.setdefault(m.group(1), len(started))
            elif m := re.match(r'[✔✘➜] Test (".*"|\S+) (with \d+ test cases? )?(passed|failed|skipped)', line):
                ended.add(m.group(1))
            # XCTest: "Test Case '-[Module.Class test]' started." and "... passed/failed (0.1 seconds)."
            elif m := re.match(r"Test Case '(.*?)' started", line):
                started.setdefault(m.group(1), len(started))
            elif m := re.match(r"Test Case '(.*?)' (passed|failed|skipped)", line):
                ended.add(m.group(1))
    return [name for name, _ in sorted(started.items(), key=lambda item: item[1]) if name not in ended]


def descendants(pid):
    """Every process below `pid`, from /proc."""
    children = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as stat:
                # The command name is in parentheses and may hold spaces: the parent id follows the last ')'.
                parent = int(stat.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(parent, []).append(int(entry))
    found, queue = [], [pid]
    while queue:
        for child in children.get(queue.pop(), []):
            found.append(child)
            queue.append(child)
    return found


def command_line(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
            return cmdline.read().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return "?"


def print_stacks(root):
    """Every thread's stack of each test process below `root` (the xctest bundles swift test runs)."""
    processes = [pid for pid in descendants(root) if ".xctest" in command_line(pid) or "swiftpm-testing-helper" in command_line(pid)]
    if not processes:
        processes = [root] + descendants(root)
    if shutil.which("gdb") is None:
        print("gdb is not installed (apt-get install gdb): no stacks.", flush=True)
        return
    for pid in processes:
        print(f"\n--- Threads of {pid}: {command_line(pid)}", flush=True)
        try:
            subprocess.run(
                ["gdb", "-p", str(pid), "-batch", "-nx", "-ex", "set pagination off", "-ex", "thread apply all bt"],
                stdout=sys.stdout, stderr=subprocess.STDOUT, timeout=300, check=False)
        except subprocess.TimeoutExpired:
            print(f"gdb did not finish within 300 s for {pid}.", flush=True)
    print("\nSuspended Swift tasks are not listed: this toolchain has no swift-inspect (dump-concurrency).", flush=True)


def main():
    if len(sys.argv) < 4 or sys.argv[2] != "--":
        sys.exit("usage: watch-tests.py LOG -- COMMAND [ARGUMENTS]")
    log_path, command = sys.argv[1], sys.argv[3:]
    # Into a pipe the test processes' output is block-buffered: lines would come in 4 KB bursts, and a test that ended
    # could still look unfinished when the run hangs. stdbuf (coreutils) makes them write each line as it is done.
    if shutil.which("stdbuf"):
        command = ["stdbuf", "-oL", "-eL"] + command
    stall = float(os.environ.get("HERALD_TEST_STALL_SECONDS", "600"))
    with open(log_path, "wb") as log:
        child = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
        last_output = [time.monotonic()]

        def copy():
            for line in child.stdout:
                log.write(line)
                log.flush()
                last_output[0] = time.monotonic()

        copier = threading.Thread(target=copy, daemon=True)
        copier.start()
        while True:
            try:
                status = child.wait(timeout=5)
                copier.join()
                return status
            except subprocess.TimeoutExpired:
                pass
            quiet = time.monotonic() - last_output[0]
            if quiet < stall:
                continue
            print(f"==> The tests made no progress for {int(quiet)} s (HERALD_TEST_STALL_SECONDS={int(stall)}): "
                  "a hang. These tests had started and not ended:", flush=True)
            for name in unfinished_tests(log_path):
                print("  " + name, flush=True)
            print("\n==> Stacks of every thread of the test processes:", flush=True)
            print_stacks(child.pid)
            os.killpg(child.pid, signal.SIGKILL)
            child.wait()
            print("\n==> The run was stopped and fails: a hang is a bug, not a reason to run again (docs/testing.md).",
                  flush=True)
            return 124


if __name__ == "__main__":
    sys.exit(main())
