#!/usr/bin/env python3
"""Runs a command and prints its stderr, stdout and exit status
(`exit: N`, or `signal: N` when it was killed), so that lit tests can check
the status (lit's `not` only tells zero from non-zero). Always exits 0."""
import subprocess
import sys

r = subprocess.run(sys.argv[1:], capture_output=True, timeout=120)
sys.stdout.write(r.stderr.decode(errors="replace"))
sys.stdout.write(r.stdout.decode(errors="replace"))
print("signal: %d" % -r.returncode if r.returncode < 0 else
      "exit: %d" % r.returncode)
