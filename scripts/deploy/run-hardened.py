#!/usr/bin/python3
"""Runs a command under the process restrictions a systemd unit file asks for, built as systemd 252 builds them.

    run-hardened.py UNIT_FILE [--uid UID | --keep-privileges] -- COMMAND [ARGUMENT...]

There is no systemd as PID 1 in CI (nor in most containers), so `systemd-run -p …` cannot show whether Herald
tolerates its unit's hardening. This script reads the unit's [Service] settings and applies the ones a process can
apply to itself before exec, with the same kernel mechanisms systemd uses:

- SystemCallFilter= (allow-lists and ~deny-lists, groups expanded by `systemd-analyze syscall-filter`),
  SystemCallErrorNumber=, SystemCallArchitectures=native: a seccomp filter;
- RestrictAddressFamilies=: a seccomp filter on socket(2)'s family, EAFNOSUPPORT otherwise;
- MemoryDenyWriteExecute=: systemd 252's seccomp rules (no mmap both writable and executable, no mprotect or
  pkey_mprotect to executable, no shmat with SHM_EXEC);
- NoNewPrivileges=, CapabilityBoundingSet= (empty: every capability dropped), and DynamicUser= as --uid.
  --keep-privileges applies the seccomp filters only: whether the binary tolerates them, apart from running
  unprivileged.

The namespace settings (ProtectSystem=, PrivateTmp=, ProtectHome=, …) are applied around this script by
scripts/check-deploy.sh with unshare(1). Needs Debian's python3-seccomp, so it runs with /usr/bin/python3.
"""
import ctypes
import errno
import os
import re
import socket
import subprocess
import sys

import seccomp

PR_CAPBSET_DROP = 24
PR_SET_NO_NEW_PRIVS = 38
PROT_WRITE, PROT_EXEC = 0x2, 0x4
SHM_EXEC = 0o100000
AF_MAX = 46  # one past the highest family Linux 6.x knows


def service_settings(path):
    """[Service] settings as name -> list of values, in order (settings such as SystemCallFilter= repeat)."""
    settings, section = {}, None
    for line in open(path):
        line = line.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("["):
            section = line
            continue
        if section == "[Service]" and "=" in line:
            name, value = line.split("=", 1)
            settings.setdefault(name.strip(), []).append(value.strip())
    return settings


def syscall_groups():
    """Every @group with its members, as `systemd-analyze syscall-filter` prints them."""
    text = subprocess.run(["systemd-analyze", "syscall-filter"], capture_output=True, text=True, check=True).stdout
    groups, current = {}, None
    for line in text.splitlines():
        if line.startswith("@"):
            current = groups.setdefault(line.strip(), [])
        elif current is not None and line.strip() and not line.strip().startswith("#"):
            current.append(line.strip())
    return groups


def expand(names, groups, seen=None):
    seen = set() if seen is None else seen
    result = set()
    for name in names:
        if name.startswith("@"):
            if name in seen:
                continue
            seen.add(name)
            result |= expand(groups[name], groups, seen)
        else:
            result.add(name)
    return result


def allowed_syscalls(filters, groups):
    """systemd's rule: the first allow-list sets the set; later allow-lists add to it, deny-lists (~) take away."""
    allowed = None
    for value in filters:
        deny = value.startswith("~")
        names = expand(value.lstrip("~").split(), groups)
        if allowed is None:
            allowed = set() if not deny else None
        if deny:
            if allowed is None:
                sys.exit("run-hardened.py: a deny-list SystemCallFilter= first is not supported here")
            allowed -= names
        else:
            allowed |= names
    return allowed


def add_rule(flt, action, name, *args):
    try:
        flt.add_rule(action, name, *args)
    except (RuntimeError, ValueError):
        pass  # a name libseccomp does not know on this architecture (systemd skips those too)


def main():
    argv = sys.argv[1:]
    if "--" not in argv or not argv:
        sys.exit(__doc__)
    split = argv.index("--")
    options, command = argv[:split], argv[split + 1:]
    unit = options[0]
    uid = int(options[options.index("--uid") + 1]) if "--uid" in options else None
    keep_privileges = "--keep-privileges" in options
    settings = service_settings(unit)
    truthy = lambda name: settings.get(name, ["no"])[-1].lower() in ("yes", "true", "1", "on")
    libc = ctypes.CDLL(None, use_errno=True)
    applied = []

    if settings.get("CapabilityBoundingSet", [None])[-1] == "" and not keep_privileges:
        last_cap = int(open("/proc/sys/kernel/cap_last_cap").read())
        for cap in range(last_cap + 1):
            libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0)  # EINVAL for caps this kernel lacks: nothing to drop
        applied.append("CapabilityBoundingSet= (none)")
    if uid is not None and os.getuid() == 0 and not keep_privileges:
        os.setgroups([])
        os.setgid(uid)
        os.setuid(uid)
        applied.append(f"user {uid}")
    if truthy("NoNewPrivileges") or "SystemCallFilter" in settings:
        if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            sys.exit("run-hardened.py: prctl(PR_SET_NO_NEW_PRIVS) failed")
        applied.append("NoNewPrivileges")

    # Filters stack: each syscall gets the strictest answer of all of them, so each feature is a filter of its own,
    # as systemd installs them. The permissive ones go first: the allow-list may not allow seccomp(2) itself.
    if "RestrictAddressFamilies" in settings:
        families = set()
        for value in settings["RestrictAddressFamilies"]:
            families |= {getattr(socket, name) for name in value.split()}
        flt = seccomp.SyscallFilter(defaction=seccomp.ALLOW)
        for family in range(AF_MAX):
            if family not in families:
                add_rule(flt, seccomp.ERRNO(errno.EAFNOSUPPORT), "socket", seccomp.Arg(0, seccomp.EQ, family))
        flt.load()
        applied.append("RestrictAddressFamilies=" + " ".join(settings["RestrictAddressFamilies"]))
    if truthy("MemoryDenyWriteExecute"):
        flt = seccomp.SyscallFilter(defaction=seccomp.ALLOW)
        both = PROT_WRITE | PROT_EXEC
        add_rule(flt, seccomp.ERRNO(errno.EPERM), "mmap", seccomp.Arg(2, seccomp.MASKED_EQ, both, both))
        add_rule(flt, seccomp.ERRNO(errno.EPERM), "mprotect", seccomp.Arg(2, seccomp.MASKED_EQ, PROT_EXEC, PROT_EXEC))
        add_rule(flt, seccomp.ERRNO(errno.EPERM), "pkey_mprotect",
                 seccomp.Arg(2, seccomp.MASKED_EQ, PROT_EXEC, PROT_EXEC))
        add_rule(flt, seccomp.ERRNO(errno.EPERM), "shmat", seccomp.Arg(2, seccomp.MASKED_EQ, SHM_EXEC, SHM_EXEC))
        flt.load()
        applied.append("MemoryDenyWriteExecute")
    if "SystemCallFilter" in settings:
        allowed = allowed_syscalls(settings["SystemCallFilter"], syscall_groups())
        # HERALD_SECCOMP_KILL=1 kills on a refused call instead of the unit's errno: a test then cannot pass because
        # some code path quietly took the error.
        if os.environ.pop("HERALD_SECCOMP_KILL", "") == "1":
            refused, how = seccomp.KILL_PROCESS, "kill"
        else:
            number = settings.get("SystemCallErrorNumber", [None])[-1]
            refused = seccomp.ERRNO(getattr(errno, number)) if number else seccomp.KILL_PROCESS
            how = number or "kill"
        # SystemCallArchitectures=native: libseccomp's filter covers the native architecture only, and refuses others.
        flt = seccomp.SyscallFilter(defaction=refused)
        for name in sorted(allowed):
            add_rule(flt, seccomp.ALLOW, name)
        add_rule(flt, seccomp.ALLOW, "execve")  # systemd allows the exec of the service itself
        flt.load()
        applied.append(f"SystemCallFilter ({len(allowed)} calls, others: {how})")

    print("run-hardened.py: " + "; ".join(applied), file=sys.stderr, flush=True)
    os.execvp(command[0], command)


if __name__ == "__main__":
    main()
