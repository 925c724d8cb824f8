"""A metadata directory's ``meta.properties``, version 1 (TOOL-1; STORAGE.md, "meta.properties").

A formatted directory holds ``meta.properties``: ``version=1``, the cluster's id (``cluster.id``)
and the node's (``node.id``), as ``key=value`` lines, ``#`` and ``!`` starting comments. A
controller refuses to start on a directory without one, or with one that names another node or
another cluster: the error names the file, the key and both values.

The file is written atomically (a temporary file in the same directory, fsynced, renamed over
``meta.properties``, the directory fsynced), so a crash leaves the directory either unformatted
or formatted, never with half a file.
"""

from __future__ import annotations

from pathlib import Path

from attrs import frozen

from .disk_files import StorageError, prepare_directory, write_atomically

META_PROPERTIES = "meta.properties"
VERSION = "1"
MAX_NODE_ID = 2**31 - 1


@frozen
class MetaProperties:
    cluster_id: str
    node_id: int


class MetaPropertiesError(StorageError):
    """A meta.properties that is missing, malformed, or disagrees with the configuration; ``key``
    names the key at fault (None when the file itself is missing or unreadable)."""

    def __init__(self, path: Path | str, problem: str, key: str | None = None) -> None:
        super().__init__(path, problem)
        self.key = key


def render(meta: MetaProperties) -> bytes:
    """The file's bytes: a comment line naming the writer, then the three keys."""
    return f"#\n#written by kraftspec\ncluster.id={meta.cluster_id}\nversion={VERSION}\nnode.id={meta.node_id}\n".encode("ascii")


def parse(data: bytes, path: Path) -> MetaProperties:
    """The file's contents, or MetaPropertiesError naming the file, the line or key, and the value."""
    text = data.decode("iso-8859-1")  # a Java properties file: every byte is a character
    values: dict[str, str] = {}
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line[0] in "#!":
            continue
        key, sep, value = line.partition("=")
        if not sep or not key.strip():
            raise MetaPropertiesError(path, f"line {number}: {line[:60]!r} is not key=value")
        values[key.strip()] = value.strip()
    version = values.get("version")
    if version is None:
        raise MetaPropertiesError(path, "version is missing; a formatted directory has version=1", "version")
    if version != VERSION:
        raise MetaPropertiesError(path, f"version is {version!r}; only version 1 (KRaft) is supported", "version")
    cluster_id = values.get("cluster.id", "")
    if not cluster_id:
        raise MetaPropertiesError(path, "cluster.id is missing; version 1 requires it", "cluster.id")
    if "node.id" not in values:
        hint = " (broker.id is version 0's key)" if "broker.id" in values else ""
        raise MetaPropertiesError(path, f"node.id is missing{hint}", "node.id")
    text_id = values["node.id"]
    if not text_id.isascii() or not text_id.isdigit() or int(text_id) > MAX_NODE_ID:
        raise MetaPropertiesError(path, f"node.id {text_id!r} is not a node id (0 to {MAX_NODE_ID})", "node.id")
    return MetaProperties(cluster_id, int(text_id))


def read(directory: Path | str) -> MetaProperties | None:
    """The meta.properties of ``directory``, or None if it has none."""
    path = Path(directory) / META_PROPERTIES
    try:
        data = path.read_bytes()
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as error:
        raise MetaPropertiesError(path, f"cannot read it: {error.strerror}") from error
    return parse(data, path)


def write(directory: Path | str, meta: MetaProperties) -> Path:
    """Write ``directory``'s meta.properties atomically (the directory is created if missing)."""
    directory = prepare_directory(Path(directory), "metadata")
    path = directory / META_PROPERTIES
    write_atomically(path, render(meta))
    return path


def check(directory: Path | str, cluster_id: str, node_id: int) -> MetaProperties:
    """TOOL-1 at start-up: the directory is formatted, for this node of this cluster; else
    MetaPropertiesError naming the file, the key and both values."""
    path = Path(directory) / META_PROPERTIES
    meta = read(directory)
    if meta is None:
        raise MetaPropertiesError(
            path, "missing: the directory is not formatted (format it first: kraftspec storage format)"
        )
    if meta.node_id != node_id:
        raise MetaPropertiesError(path, f"node.id is {meta.node_id} but the configured node.id is {node_id}", "node.id")
    if meta.cluster_id != cluster_id:
        raise MetaPropertiesError(
            path, f"cluster.id is {meta.cluster_id!r} but the configured cluster id is {cluster_id!r}", "cluster.id"
        )
    return meta
