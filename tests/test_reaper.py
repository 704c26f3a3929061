"""commlab.classroom.reaper: a process made a subreaper ends every descendant, a daemon that
double-forked out of its parent's tree included."""
import subprocess
import sys
import time

import psutil

DAEMON = r'''
import os, subprocess, sys, time
from commlab.classroom.reaper import become_subreaper, end_descendants
become_subreaper()
child = subprocess.Popen([sys.executable, "-c",
    "import os, sys, time\nif os.fork() == 0:\n    print(os.getpid(), flush=True)\n    time.sleep(300)\n"],
    stdout=subprocess.PIPE, text=True)
daemon = int(child.stdout.readline())
child.wait()  # the daemon's parent is gone: it is an orphan, adopted by this process
time.sleep(0.2)
print(daemon, end_descendants(), flush=True)
'''


def test_an_orphaned_daemon_is_ended():
    out = subprocess.run([sys.executable, "-c", DAEMON], capture_output=True, text=True, timeout=60)
    daemon, ended = map(int, out.stdout.split())
    assert ended >= 1
    time.sleep(0.2)
    assert not psutil.pid_exists(daemon) or psutil.Process(daemon).status() == psutil.STATUS_ZOMBIE
