"""Workspaces: the sources that fill a trial's fresh workspace, how a tree is copied into it, and
snapshots of it for ``context.files_changed()``, and the archive that keeps each trial's
workspace as the agent left it (for ``anpord regrade``).

Depends on nothing else in anpord, so authoring (which declares sources) and sandboxes (which
fill workspaces) both import it without importing each other.
"""

from ._archive import ARCHIVE_DIR, ArchiveError, BaseRef, read_archive, take_base, take_snapshot, trial_key
from ._fill import copy_tree, remove_tree
from ._snapshot import Snapshot, changed_paths, snapshot
from ._sources import (
    Directory,
    Files,
    Repo,
    Source,
    SourceError,
    directory,
    files,
    repo,
    safe_relative_path,
)

__all__ = [
    "ARCHIVE_DIR",
    "ArchiveError",
    "BaseRef",
    "Directory",
    "Files",
    "Repo",
    "Snapshot",
    "Source",
    "SourceError",
    "changed_paths",
    "copy_tree",
    "directory",
    "files",
    "read_archive",
    "remove_tree",
    "repo",
    "safe_relative_path",
    "snapshot",
    "take_base",
    "take_snapshot",
    "trial_key",
]
