"""A container image for the docker sandbox's tests, made from this machine's own files (no
registry is needed): bash, a few coreutils and python3 with its standard library, imported into
the container engine once (tagged by the hash of what went in) and reused by later runs."""

from __future__ import annotations

import hashlib
import io
import os
import subprocess
import tarfile
from pathlib import Path

from anpord.sandboxes._container import LABEL, find_cli

PROGRAMS = (
    "bash", "sh", "dash", "cat", "ls", "head", "tail", "sleep", "echo", "mkdir", "rm", "cp", "mv",
    "dd", "env", "true", "false", "printf", "touch", "wc", "id", "tr", "sort", "grep", "setsid", "python3",
)  # fmt: skip
PYTHON_LIB = Path("/usr/lib/python3.11")


def _libraries(paths: list[str]) -> set[str]:
    done = subprocess.run(["ldd", *paths], capture_output=True, text=True)
    found = set()
    for line in done.stdout.splitlines():
        for word in line.split():
            if word.startswith("/") and os.path.exists(word):
                found.add(word)
    return found


def _members() -> list[str]:
    programs = [p for name in PROGRAMS if os.path.exists(p := f"/usr/bin/{name}")]
    return sorted({*programs, *_libraries(programs)})


def sandbox_image() -> str:
    """The image's name, imported now if the engine does not have it yet."""
    cli = find_cli()
    members = _members()
    digest = hashlib.sha256("\n".join(members).encode() + str(PYTHON_LIB).encode()).hexdigest()[:12]
    name = f"localhost/anpord-test:{digest}"
    if cli.run_sync("image", "inspect", "--format", "{{.Id}}", name).returncode == 0:
        return name
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for path in members:  # by real content: /lib may be a link on the host, not in the image
            tar.add(os.path.realpath(path), arcname=path.lstrip("/"))
        tar.add(PYTHON_LIB, arcname=str(PYTHON_LIB).lstrip("/"),
                filter=lambda m: None if "/test/" in m.name or "__pycache__" in m.name else m)
        for folder in ("tmp", "root", "etc"):
            info = tarfile.TarInfo(folder)
            info.type, info.mode = tarfile.DIRTYPE, 0o1777 if folder == "tmp" else 0o755
            tar.addfile(info)
        passwd = b"root:x:0:0:root:/root:/bin/bash\n"
        info = tarfile.TarInfo("etc/passwd")
        info.size = len(passwd)
        tar.addfile(info, io.BytesIO(passwd))
        info = tarfile.TarInfo("bin")
        info.type, info.linkname = tarfile.SYMTYPE, "usr/bin"
        tar.addfile(info)
    done = subprocess.run(
        [cli.path, "import", "--change", f"LABEL {LABEL}=1", "--change", "ENV PATH=/usr/bin:/bin",
         "-", name],
        input=buffer.getvalue(), capture_output=True, env=cli.env,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr.decode()
    return name


def containers(label: str = LABEL, under: Path | None = None) -> list[str]:
    """Every container (running or not) that carries ``label``; with ``under``, only those whose
    trial folders are there (a run's own, whatever other runs on this machine have going)."""
    cli = find_cli()
    shown = "{{.Names}}\t{{.Mounts}}"
    done = cli.run_sync("ps", "-a", "--filter", f"label={label}", "--format", shown)
    rows = [line.split("\t", 1) for line in done.stdout.splitlines() if line.strip()]
    return [
        row[0]
        for row in rows
        if under is None or (len(row) > 1 and f"{os.path.realpath(under)}/" in row[1])
    ]
