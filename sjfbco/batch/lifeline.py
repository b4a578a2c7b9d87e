"""The local pool's processes end with the run that started them.

A batch killed with SIGKILL runs no clean-up: without help its process pool's
fork server and workers (and, through them, multiprocessing's resource
tracker) went on running, reparented to init. On Linux each of them now asks
the kernel for a parent-death signal (``prctl(PR_SET_PDEATHSIG, SIGKILL)``):

- the fork server, when it imports the preload module
  :mod:`sjfbco.batch.forkserver_preload` (:func:`for_fork_server`): it dies
  with the run's process;
- each worker, in the pool's initializer (:func:`for_worker`): it dies with
  the fork server, its parent;
- the resource tracker then reads end-of-file on its pipe (no process holds
  it any more) and exits by itself.

Elsewhere (macOS, Windows) these calls do nothing. The run's process id
reaches the fork server in the environment variable :data:`OWNER_ENV` (set by
:func:`mark_owner` before the pool starts).
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import threading

#: Environment variable naming the process whose pool this is (its decimal pid).
OWNER_ENV = "SJFBCO_POOL_OWNER"
#: Environment variable naming the fork server (set in it; its workers inherit it).
SERVER_ENV = "SJFBCO_POOL_SERVER"

#: ``PR_SET_PDEATHSIG`` of ``<linux/prctl.h>``.
PR_SET_PDEATHSIG = 1


def mark_owner() -> int:
    """Name this process as the owner of the pools it starts (:data:`OWNER_ENV`); its pid.

    Only from the main thread: the kernel sends the parent-death signal when the
    *thread* that started the fork server ends, and a fork server started from
    another thread (a notebook running a batch in a thread) would die with that
    thread while a later pool of another thread still used it. From another
    thread the mark is removed, so such a fork server runs without the signal (a
    SIGKILL of the process then leaves it running, as before).
    """
    pid = os.getpid()
    if threading.current_thread() is threading.main_thread():
        os.environ[OWNER_ENV] = str(pid)
    elif os.environ.get(OWNER_ENV) == str(pid):
        del os.environ[OWNER_ENV]
    return pid


def die_with_parent() -> bool:
    """Ask for SIGKILL when this process's parent ends; whether the kernel agreed
    (false off Linux or without ``prctl``)."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


def _gone(pid: int) -> bool:
    """Whether ``pid`` has ended: no such process, another user's (the pid was reused), or
    a zombie that its parent has not reaped yet."""
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, PermissionError):
        return True
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            return fh.read().rsplit(b")", 1)[1].split()[0] == b"Z"
    except (OSError, IndexError):
        return False  # no /proc: alive as far as we can tell


def in_fork_server() -> bool:
    """Whether this process is a multiprocessing fork server (started as ``python -c 'from
    multiprocessing.forkserver import main; ...'``)."""
    return sys.argv[:1] == ["-c"] and "multiprocessing.forkserver" in sys.modules


def for_fork_server() -> None:
    """In a fork server started by a pool owner (:data:`OWNER_ENV` names its parent): die
    with the owner. An owner that died before the request was made ends the server now.
    Anywhere else (not a fork server, the variable unset or naming another process)
    nothing happens."""
    if not in_fork_server():
        return
    os.environ.pop(SERVER_ENV, None)  # never a stale one (a pool inside a pool's worker)
    owner = os.environ.get(OWNER_ENV, "")
    if not owner.isdigit():
        return
    if int(owner) != os.getppid():
        if _gone(int(owner)):  # reparented already: the owner was killed while we started
            os._exit(0)
        return  # a process the owner did not start itself
    die_with_parent()
    if os.getppid() != int(owner):  # the owner died between the check and the request
        os._exit(0)
    os.environ[SERVER_ENV] = str(os.getpid())  # the workers it forks read it


def for_worker(owner: int) -> None:
    """Pool initializer: die with the fork server (this worker's parent); end now if it or
    the pool's ``owner`` is already gone (either may have died before the request: the
    worker is then an orphan, its parent no longer the fork server)."""
    die_with_parent()
    server = os.environ.get(SERVER_ENV, "")
    if (server.isdigit() and int(server) != os.getppid()) or _gone(owner):
        os._exit(0)
