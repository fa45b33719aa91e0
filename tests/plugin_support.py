"""The example plugin package (``examples/plugin_package``), installed as a user installs it —
``pip install`` of the package — but into a folder of its own (``--target``) that a subprocess
finds on ``PYTHONPATH``, so the shared environment never sees it; and a broken one, a
distribution whose entry points name modules that do not exist."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from project_support import SRC

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "plugin_package"

BROKEN_ENTRY_POINTS = """\
[anpord.harnesses]
broken = no_such_module_anywhere:resolve

[anpord.reporters]
broken = no_such_module_anywhere:Reporter
"""


def install_example(target: Path) -> Path:
    """``pip install`` the example package into ``target`` (built from a copy, so the source tree
    gets no build folders). Offline: the build uses this environment's setuptools and wheel."""
    source = target.parent / "plugin_package_src"
    shutil.copytree(EXAMPLE, source, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
         "--no-index", "--target", str(target), str(source)],
        check=True, capture_output=True, text=True, timeout=300,
    )
    return target


def install_broken(target: Path) -> Path:
    """A distribution ``broken-plugin 0.2`` whose entry points do not import."""
    info = target / "broken_plugin-0.2.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: broken-plugin\nVersion: 0.2\n")
    (info / "entry_points.txt").write_text(BROKEN_ENTRY_POINTS)
    return target


def plugin_path(*folders: Path) -> dict[str, str]:
    """The environment a subprocess needs to run this checkout with the plugins in ``folders``."""
    return {"PYTHONPATH": os.pathsep.join([str(SRC), *map(str, folders)])}
