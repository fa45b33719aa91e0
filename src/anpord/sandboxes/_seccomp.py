"""A seccomp filter that keeps a sandboxed program from making (or joining) user namespaces.

Why: as root, bwrap runs programs as an unprivileged user of the host, without a user namespace
of their own; bwrap's ``--disable-userns`` needs one (``--unshare-user``). Such a program could
still ``unshare -Ur`` and hold a full capability set in a namespace of its own — raw sockets,
netfilter, mounts — the kernel surface the sandbox means to keep away. The filter refuses, with
EPERM: ``unshare`` and ``clone`` asking for ``CLONE_NEWUSER``, and ``setns``. ``clone3`` (whose
flags sit in memory a filter cannot read) answers ENOSYS, on which the C library falls back to
``clone``. What Flatpak and container runtimes do.

The program is classic BPF, built here (no libseccomp needed), for the host's architecture and
its 32-bit compatibility one; other architectures get no filter (``userns_filter`` is None).
"""

from __future__ import annotations

import platform
import struct

__all__ = ["userns_filter"]

CLONE_NEWUSER = 0x10000000
_EPERM, _ENOSYS = 1, 38

# BPF instruction classes and modes used below.
_LD_W_ABS = 0x20
_JEQ_K = 0x15
_JSET_K = 0x45
_AND_K = 0x54
_RET_K = 0x06
_RET_ALLOW = 0x7FFF0000
_RET_ERRNO = 0x00050000
_X32_BIT = 0x40000000

# struct seccomp_data: int nr; u32 arch; u64 instruction_pointer; u64 args[6] (little-endian:
# the low half of args[0] is at 16).
_NR, _ARCH, _ARG0_LOW = 0, 4, 16

# (audit arch, {syscall: number}) per machine, native first, then its compat ABI.
_TABLES: dict[str, list[tuple[int, dict[str, int]]]] = {
    "x86_64": [
        (0xC000003E, {"clone": 56, "unshare": 272, "setns": 308, "clone3": 435}),
        (0x40000003, {"clone": 120, "unshare": 310, "setns": 346, "clone3": 435}),  # i386
    ],
    "aarch64": [
        (0xC00000B7, {"clone": 220, "unshare": 97, "setns": 268, "clone3": 435}),
        (0x40000028, {"clone": 120, "unshare": 337, "setns": 375, "clone3": 435}),  # arm
    ],
}


def userns_filter(machine: str | None = None) -> bytes | None:
    """The filter for ``machine`` (default: this one), as bwrap's ``--add-seccomp-fd`` reads it:
    ``struct sock_filter`` records. None for an architecture it does not know."""
    machine = machine or platform.machine()
    tables = _TABLES.get(machine)
    if tables is None:
        return None
    # (code, jt, jf, k): a jump goes jt/jf instructions past the next one.
    prog: list[tuple[int, int, int, int]] = [(_LD_W_ABS, 0, 0, _ARCH)]
    blocks = [_arch_block(numbers, x32=(i == 0 and machine == "x86_64")) for i, (_, numbers) in enumerate(tables)]
    # Dispatch: for each arch, "jeq arch → its block", else try the next; none matched: allow
    # (a program cannot use an ABI the kernel does not offer).
    dispatch_len = len(blocks) + 1
    offset = 0
    for i, ((arch, _), block) in enumerate(zip(tables, blocks)):
        # From dispatch instruction i, the block starts after the remaining dispatch (including
        # the final allow) and the blocks before it.
        jt = (dispatch_len - 1 - i) + offset
        prog.append((_JEQ_K, jt, 0, arch))
        offset += len(block)
    prog.append((_RET_K, 0, 0, _RET_ALLOW))
    for block in blocks:
        prog.extend(block)
    return b"".join(struct.pack("<HBBI", *ins) for ins in prog)


def _arch_block(nr: dict[str, int], *, x32: bool) -> list[tuple[int, int, int, int]]:
    """Syscall checks for one ABI: a self-contained run of instructions ending in returns."""
    allow = (_RET_K, 0, 0, _RET_ALLOW)
    eperm = (_RET_K, 0, 0, _RET_ERRNO | _EPERM)
    enosys = (_RET_K, 0, 0, _RET_ERRNO | _ENOSYS)
    block: list[tuple[int, int, int, int]] = [(_LD_W_ABS, 0, 0, _NR)]
    if x32:
        # x32 programs use the x86_64 numbers with this bit set; these four are common to both.
        block.append((_AND_K, 0, 0, 0xFFFFFFFF & ~_X32_BIT))
    # Layout after the loads:
    #   0 jeq setns   → EPERM (at +6)
    #   1 jeq clone3  → ENOSYS (at +6)
    #   2 jeq unshare → flags check (at +3)
    #   3 jeq clone   → flags check (at +2)
    #   4 allow
    #   5 ld args[0]
    #   6 jset CLONE_NEWUSER → EPERM (+1) else allow (+0 → next is allow)
    #   7 allow
    #   8 EPERM
    #   9 ENOSYS
    block += [
        (_JEQ_K, 8 - 0 - 1, 0, nr["setns"]),
        (_JEQ_K, 9 - 1 - 1, 0, nr["clone3"]),
        (_JEQ_K, 5 - 2 - 1, 0, nr["unshare"]),
        (_JEQ_K, 5 - 3 - 1, 0, nr["clone"]),
        allow,
        (_LD_W_ABS, 0, 0, _ARG0_LOW),
        (_JSET_K, 8 - 6 - 1, 0, CLONE_NEWUSER),
        allow,
        eperm,
        enosys,
    ]
    return block
