"""What tools/redis-compare.py and tools/redis-beyond-memory.py share."""
import subprocess
import sys
import time


def wait_ping(port, proc, log, seconds=60):
    """Waits until the server on `port` (started as `proc`, logging to `log`) answers PING."""
    for _ in range(seconds * 10):
        if proc.poll() is not None:
            sys.exit(f"the server exited before answering: see {log}")
        r = subprocess.run(["redis-cli", "-p", str(port), "ping"], capture_output=True, text=True)
        if r.stdout.strip() == "PONG":
            return
        time.sleep(0.1)
    sys.exit(f"the server did not answer PING within {seconds} s: see {log}")
