"""The seccomp filter every sandboxed command runs under: system calls model code never needs.

Built with libseccomp (through `pyseccomp`, its ctypes binding), which knows each
architecture's system call numbers and blocks the other ABIs of the machine (i386 and x32
calls on x86-64) itself. The filter is handed to bubblewrap as a file descriptor
(`--seccomp FD`); bubblewrap loads it last, after building the sandbox, so its own mounts
still work and nothing the command starts can undo it.

Refused (EPERM): mounting and namespaces (a new user namespace would give the code back every
capability inside it), tracing other processes, the kernel keyring, BPF and perf, loading
kernel modules or a new kernel, swap, reboot, the clock, raw I/O ports, file handles that open
by inode (`open_by_handle_at`, the classic container escape), and `userfaultfd`.
`clone` with a namespace flag is refused like `unshare`; `clone3` (whose flags are in memory
the filter cannot read) answers ENOSYS, so the C library falls back to `clone`.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import os
import tempfile

INSTALL_HINT = ("the sandbox's seccomp filter needs libseccomp: install it (Debian/Ubuntu: "
                "`apt-get install libseccomp2`, Fedora: `dnf install libseccomp`)")
BLOCKED = (
    "mount", "umount", "umount2", "pivot_root", "chroot", "unshare", "setns",
    "fsopen", "fsconfig", "fsmount", "fspick", "move_mount", "open_tree", "mount_setattr",
    "ptrace", "process_vm_readv", "process_vm_writev", "kcmp", "pidfd_getfd",
    "keyctl", "add_key", "request_key", "bpf", "perf_event_open", "userfaultfd",
    "kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module",
    "create_module", "swapon", "swapoff", "reboot", "acct", "quotactl", "syslog",
    "settimeofday", "clock_settime", "adjtimex", "clock_adjtime", "sethostname",
    "setdomainname", "iopl", "ioperm", "open_by_handle_at", "name_to_handle_at",
    "lookup_dcookie", "nfsservctl", "uselib", "vhangup", "_sysctl",
)
# CLONE_NEWNS, NEWCGROUP, NEWUTS, NEWIPC, NEWUSER, NEWPID, NEWNET, NEWTIME
_CLONE_NAMESPACES = (0x00020000, 0x02000000, 0x04000000, 0x08000000, 0x10000000,
                     0x20000000, 0x40000000, 0x00000080)


@functools.cache
def filter_program() -> bytes:
    """The filter as the BPF program bubblewrap loads (RuntimeError(INSTALL_HINT) without
    libseccomp)."""
    try:
        import pyseccomp as seccomp  # type: ignore[import-untyped]
    except (ImportError, OSError, TypeError) as e:  # TypeError: CDLL(None) without the library
        raise RuntimeError(INSTALL_HINT) from e
    refuse = seccomp.ERRNO(errno.EPERM)
    f = seccomp.SyscallFilter(seccomp.ALLOW)
    for name in BLOCKED:
        try:
            f.add_rule(refuse, name)
        except (OSError, ValueError):
            continue  # not a system call of this architecture
    for flag in _CLONE_NAMESPACES:
        f.add_rule(refuse, "clone", seccomp.Arg(0, seccomp.MASKED_EQ, flag, flag))
    with contextlib.suppress(OSError, ValueError):
        f.add_rule(seccomp.ERRNO(errno.ENOSYS), "clone3")
    with tempfile.TemporaryFile() as out:
        f.export_bpf(out)
        out.seek(0)
        return out.read()


def filter_fd() -> int:
    """A new file descriptor at the start of the filter program (the caller closes it)."""
    program = filter_program()
    fd = os.memfd_create("massgen-seccomp", 0)
    os.write(fd, program)
    os.lseek(fd, 0, os.SEEK_SET)
    return fd
