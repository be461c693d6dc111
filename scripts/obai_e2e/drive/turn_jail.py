"""Run one turn of the target contained (a standalone script: the standard library only, no package import).

    python -I -S turn_jail.py SPEC -- ARGV...

The built-in way to contain a turn, for machines without bubblewrap (drive.containment). SPEC is
a JSON object: ``ro`` (folders the turn sees read-only), ``rw`` (folders inside them it may write:
its sandbox), ``hidden`` (folders it cannot read: each covered by an empty read-only tmpfs),
``private`` (the machine's shared tmpfs mounts it gets an empty one of its own instead of),
``budget`` (bytes, or null: the largest file it may write, and the size of each private tmpfs),
``user`` (make a user namespace first: for a harness that is not root) and ``parent`` (the
harness's pid). The script sets its parent-death signal (SIGKILL: it dies with the harness thread
that started it, a harness killed with SIGKILL too), makes a new mount namespace and a new PID
namespace, mounts each ``ro`` folder read-only over itself, each ``rw`` folder writable over itself,
each ``hidden`` and ``private`` one as said, then forks twice:

* the first child is the namespace's init (pid 1): it reaps what is orphaned there and does
  nothing else; it dies with this script (its parent-death signal). When it dies, the kernel
  kills every process left in the namespace, so nothing the turn started can outlive it,
  however it detached (double fork, ``setsid``, an empty environment, ``cwd /``).
* the second child mounts a ``/proc`` of the new namespace (the agent sees its own processes
  only, not the harness's, nor their environments), makes the machine's own knobs (``/sys``,
  ``/proc/sys``, ``/proc/sysrq-trigger``) read-only, drops every capability (from its
  bounding, effective, permitted, inheritable and ambient sets: nothing it runs can regain
  one), sets no_new_privs, and executes ARGV. It is pid 2, not pid 1, so signals reach it as they
  would outside (pid 1 ignores every signal it has no handler for).

This process waits for ARGV's process, then kills init (and so the namespace), and ends as
that process ended: with its exit code, or by the same signal. It ignores SIGTERM, SIGINT,
SIGHUP and SIGQUIT meanwhile: they reach the target through its process group. A setup step
that fails ends this script with exit code 125 and a line on stderr naming the step.
"""
import ctypes
import json
import os
import resource
import signal
import sys

SETUP_FAILED = 125
CLONE_NEWNS, CLONE_NEWUSER, CLONE_NEWPID = 0x00020000, 0x10000000, 0x20000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_NOATIME, MS_NODIRATIME, MS_BIND, MS_REC = 32, 1024, 2048, 4096, 16384
MS_PRIVATE, MS_RELATIME = 1 << 18, 1 << 21
ST_RELATIME = 4096
PR_SET_PDEATHSIG, PR_CAPBSET_DROP, PR_SET_NO_NEW_PRIVS, PR_CAP_AMBIENT = 1, 24, 38, 47
PR_CAP_AMBIENT_CLEAR_ALL = 4
CAP_VERSION_3 = 0x20080522
CAP_SETPCAP, CAP_LAST_DEFAULT = 8, 40  # the highest capability a kernel that does not say knows of
FORWARDED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT)
HIDDEN_SIZE = 4096  # an empty tmpfs over a hidden folder holds nothing

_libc = ctypes.CDLL(None, use_errno=True)


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]


def _fail(step, detail=None):
    err = detail if detail is not None else os.strerror(ctypes.get_errno())
    os.write(2, f"obai-e2e turn containment: {step} failed: {err}\n".encode("utf-8", "replace"))
    os._exit(SETUP_FAILED)


def _call(step, result):
    if result != 0:
        _fail(step)


def _mount(source, target, fstype, flags, step):
    _call(step, _libc.mount(source and os.fsencode(source), os.fsencode(target), fstype, ctypes.c_ulong(flags),
                            None))


def _kept_flags(path):
    """The mount flags of ``path`` a remount must keep (a user namespace may not clear them)."""
    flag = os.statvfs(path).f_flag
    kept = flag & (MS_NOSUID | MS_NODEV | MS_NOEXEC | MS_NOATIME | MS_NODIRATIME)
    return kept | (MS_RELATIME if flag & ST_RELATIME else 0)


def _user_namespace():
    uid, gid = os.getuid(), os.getgid()
    _call("unshare (user namespace)", _libc.unshare(CLONE_NEWUSER))
    for name, text in (("setgroups", "deny"), ("uid_map", f"0 {uid} 1"), ("gid_map", f"0 {gid} 1")):
        with open(f"/proc/self/{name}", "w") as fh:
            fh.write(text)


def _namespaces(spec):
    if spec.get("user"):
        _user_namespace()
    _call("unshare (mount and PID namespaces)", _libc.unshare(CLONE_NEWNS | CLONE_NEWPID))
    _mount(None, "/", None, MS_REC | MS_PRIVATE, "making the mounts private")
    for path in spec.get("rw", ()):
        _mount(path, path, None, MS_BIND | MS_REC, f"binding {path}")
    for path in spec.get("ro", ()):
        _mount(path, path, None, MS_BIND | MS_REC, f"binding {path}")
        _mount(None, path, None, MS_BIND | MS_REMOUNT | MS_RDONLY | _kept_flags(path), f"making {path} read-only")
    for path in spec.get("hidden", ()):
        _tmpfs(path, HIDDEN_SIZE, f"hiding {path}")
        _mount(None, path, None, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV, f"making {path} read-only")
    for path in spec.get("private", ()):
        _tmpfs(path, spec.get("budget"), f"a private tmpfs on {path}")
    os.chdir(os.getcwd())  # the working directory, looked up again through the mounts just made


def _tmpfs(path, size, step):
    data = f"size={size}" if size else None
    _call(step, _libc.mount(b"tmpfs", os.fsencode(path), b"tmpfs", ctypes.c_ulong(MS_NOSUID | MS_NODEV),
                            data and data.encode()))


def _last_capability():
    try:
        with open("/proc/sys/kernel/cap_last_cap") as fh:
            return int(fh.read())
    except (OSError, ValueError):
        return CAP_LAST_DEFAULT


def _drop_capabilities():
    """Every capability, from the bounding set too (CAP_SETPCAP last: dropping needs it)."""
    caps = [c for c in range(_last_capability() + 1) if c != CAP_SETPCAP] + [CAP_SETPCAP]
    for cap in caps:
        if _libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 and ctypes.get_errno() != 22:  # EINVAL: unknown here
            _fail(f"dropping capability {cap}")
    _libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
    header, data = _CapHeader(CAP_VERSION_3, 0), (_CapData * 2)()
    _call("dropping the capabilities", _libc.capset(ctypes.byref(header), data))
    _call("setting no_new_privs", _libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))


def _init():
    """pid 1 of the namespace: reap orphans until killed (or until this script's process dies)."""
    _libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGCHLD})
    while True:
        try:
            while os.waitpid(-1, os.WNOHANG)[0]:
                pass
        except ChildProcessError:
            pass
        signal.sigtimedwait({signal.SIGCHLD}, 60)


def _read_only_if_there(path):
    """Best effort: the machine's own knobs (/sys, /proc/sys, /proc/sysrq-trigger) read-only; not every
    machine has each of them, and the turn's own walls do not depend on them."""
    if not os.path.exists(path):
        return
    target = os.fsencode(path)
    if _libc.mount(target, target, None, ctypes.c_ulong(MS_BIND | MS_REC), None) == 0:
        _libc.mount(None, target, None, ctypes.c_ulong(MS_BIND | MS_REMOUNT | MS_RDONLY | _kept_flags(path)), None)


def _target(argv):
    _mount("proc", "/proc", b"proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, "mounting /proc")
    for path in ("/sys", "/proc/sys", "/proc/sysrq-trigger"):
        _read_only_if_there(path)
    _drop_capabilities()
    for sig in (*FORWARDED, signal.SIGPIPE, signal.SIGXFSZ):
        signal.signal(sig, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_SETMASK, set())
    try:
        os.execvp(argv[0], argv)
    except OSError as exc:
        _fail(f"starting {argv[0]!r}", exc.strerror)


def _end_as(status):
    """End this process as the target ended."""
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        signal.signal(sig, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {sig})
        os.kill(os.getpid(), sig)
        os._exit(128 + sig)
    os._exit(os.waitstatus_to_exitcode(status))


def _bound_to_parent(spec):
    """Die with the harness thread that started this script; end at once if the harness is gone already."""
    _call("setting the parent-death signal", _libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0))
    if spec.get("parent") and os.getppid() != spec["parent"]:
        _fail("starting", "the harness that started the turn has ended")


def main(args):
    if len(args) < 3 or args[1] != "--":
        _fail("reading the command line", "usage: turn_jail.py SPEC -- ARGV...")
    spec, argv = json.loads(args[0]), args[2:]
    _bound_to_parent(spec)
    for sig in FORWARDED:
        signal.signal(sig, signal.SIG_IGN)
    if spec.get("budget"):
        resource.setrlimit(resource.RLIMIT_FSIZE, (spec["budget"], spec["budget"]))
    _namespaces(spec)
    init = os.fork()
    if init == 0:
        _init()
    target = os.fork()
    if target == 0:
        _target(argv)
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):  # the target's streams close when it and its children close them
        os.dup2(null, fd)
    _, status = os.waitpid(target, 0)
    os.kill(init, signal.SIGKILL)
    os.waitpid(init, 0)  # returns once every process of the namespace is gone
    _end_as(status)


if __name__ == "__main__":
    main(sys.argv[1:])
