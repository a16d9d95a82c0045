#!/usr/bin/env python3
"""Runs README.md's "Using it" block as a new user would, one command after another.

Each line runs with bash in a scratch folder that holds links to the repository's
examples/ and bench/ and a `fleetplan` on PATH that is the binary under test, so the
commands read exactly as the README prints them. A line's comment ending in "(exit N)"
states its expected exit code; every other line must exit 0. `fleetplan serve` runs with
an ephemeral port and --exit-after, so it stops by itself. Exit 0 when every line did as
the README says; 1 naming the first that did not.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile
import time

BLOCK = re.compile(r"^## Using it\n.*?^```sh\n(.*?)^```", re.S | re.M)
EXPECTED_EXIT = re.compile(r"\(exit (\d+)\)\s*$")


def commands(readme_text):
    match = BLOCK.search(readme_text)
    if match is None:
        raise SystemExit("README.md: no ```sh block under '## Using it'")
    return [line for line in match.group(1).splitlines() if line.strip()]


def runnable(line):
    """The line as it runs here: serve on an ephemeral port that stops by itself."""
    if line.startswith("fleetplan serve "):
        command = line.split("#", 1)[0].replace("--port 8000", "--port 0")
        return command.strip() + " --exit-after 2s"
    return line


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--fleetplan", required=True, help="the binary under test")
    parser.add_argument("--source", default=os.path.join(os.path.dirname(__file__), "..", ".."))
    args = parser.parse_args()
    source = os.path.abspath(args.source)
    binary = os.path.abspath(args.fleetplan)
    with open(os.path.join(source, "README.md"), encoding="utf-8") as f:
        lines = commands(f.read())
    with tempfile.TemporaryDirectory(prefix="readme-") as scratch:
        bin_dir = os.path.join(scratch, ".bin")
        os.mkdir(bin_dir)
        os.symlink(binary, os.path.join(bin_dir, "fleetplan"))
        for folder in ("examples", "bench"):
            os.symlink(os.path.join(source, folder), os.path.join(scratch, folder))
        env = dict(os.environ, PATH=bin_dir + os.pathsep + os.environ.get("PATH", ""))
        for line in lines:
            expected = EXPECTED_EXIT.search(line)
            want = int(expected.group(1)) if expected else 0
            started = time.monotonic()
            done = subprocess.run(["bash", "-c", runnable(line)], cwd=scratch, env=env, capture_output=True,
                                  text=True, timeout=300)
            print(f"exit {done.returncode} in {time.monotonic() - started:5.1f} s: {line}")
            if done.returncode != want:
                print(f"README.md 'Using it': expected exit {want}, got {done.returncode}:\n{line}\n"
                      f"--- stderr ---\n{done.stderr[-4000:]}", file=sys.stderr)
                return 1
    print(f"{len(lines)} passed, 0 failed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
