"""``kraftspec metadata-shell`` (TOOL-5): the tree of a snapshot or of a metadata log directory
written by impl, the shell's commands without a terminal, the command line (one-shot, -c,
standard input), and the prompt for real (prompt_toolkit's pipe input, and a pty for completion)."""

from __future__ import annotations

import io
import os
import pty
import re
import select
import subprocess
import sys
from pathlib import Path

import pytest

from cluster import Cluster
from kraftspec.cli import main
from kraftspec.conformance.lockstep import Lockstep, impl_config
from kraftspec.conformance.simulation import Simulation
from kraftspec.impl.controller import Controller
from kraftspec.impl.storage import SnapshotStore
from kraftspec.metadata_shell import Shell, Tree, history_file, interactive, normalize
from kraftspec.metadata_source import SourceError, load, load_image
from kraftspec.model import Config
from kraftspec.model.tools import metadata_tree
from kraftspec.spec.profiles import profile_names


class DiskCluster(Cluster):
    """A model cluster whose every event also goes to impl running on a metadata directory."""

    def __init__(self, directory: Path, **kwargs):
        super().__init__(**kwargs)
        self.pair = Lockstep(self.state.config)
        self.pair.impl = Controller.create(directory, impl_config(self.state.config))

    def send(self, event):
        result = super().send(event)
        assert not self.pair.send(event)
        return result

    def close(self) -> None:
        self.pair.impl.close()


def story_directory(directory: Path, seed: int, steps: int = 150):
    """A metadata directory impl wrote during a simulated story; the model's state at its end."""
    config = Config.for_profile(profile_names()[seed % len(profile_names())])
    pair = Lockstep(config)
    pair.impl = Controller.create(directory, impl_config(config))
    simulation = Simulation(seed, broker_count=4, partition_count=3)
    simulation.state = pair.model
    for happening in simulation.run(steps):
        assert not pair.send(happening.event)
        simulation.state = pair.model
    pair.impl.close()
    return pair.model


@pytest.fixture
def orders(tmp_path) -> Path:
    """Brokers 1 to 3 unfenced, topic orders with two partitions, a snapshot, then broker 4
    registered (committed) and a topic created but not committed."""
    directory = tmp_path / "meta"
    cluster = DiskCluster(directory)
    cluster.start_brokers(1, 2, 3)
    cluster.create_topic("orders", assignment=[[1, 2], [2, 3]])
    cluster.snapshot()
    cluster.register(4)
    cluster.create_topic("pending", assignment=[[1]], commit=False)
    cluster.close()
    return directory


def files_of(directory: Path) -> dict[str, bytes]:
    return {str(p.relative_to(directory)): p.read_bytes() for p in sorted(directory.rglob("*")) if p.is_file()}


# ---- the source ----------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(4))
def test_tool_5_a_directory_replays_its_newest_snapshot_and_the_committed_log_after_it(tmp_path, seed):
    """TOOL-5: as impl rebuilds at start-up; the uncommitted tail is not shown; nothing is changed."""
    model = story_directory(tmp_path, seed)
    before = files_of(tmp_path)
    loaded = load(tmp_path)
    assert metadata_tree(loaded.image) == metadata_tree(model.committed_image)
    assert loaded.profile == model.config.profile  # told by the frame type (DEC-10)
    assert (loaded.committed_offset, loaded.log_end_offset) == (model.committed_offset, model.log_end_offset)
    assert loaded.snapshot_end_offset == (model.snapshot.end_offset if model.snapshot else None)
    assert files_of(tmp_path) == before


def test_tool_5_a_snapshot_file_alone(orders):
    """TOOL-5: the snapshot holds the state it was taken at: brokers 1 to 3 and orders, not broker 4."""
    [snapshot] = sorted((orders / "snapshots").glob("*.snapshot"))
    tree = metadata_tree(load_image(snapshot))
    assert sorted({p.split("/")[2] for p in tree if p.startswith("/brokers/")}) == ["1", "2", "3"]
    assert tree["/topics/orders/1/replicas"] == "[2,3]" and tree["/topics/orders/1/leader"] == "2"
    assert not any(p.startswith("/topics/pending") for p in tree)
    whole = metadata_tree(load_image(orders))
    assert whole["/brokers/4/fenced"] == "true" and not any(p.startswith("/topics/pending") for p in whole)


def test_tool_5_damaged_files_are_errors_naming_the_file_the_byte_and_the_offset(orders, tmp_path):
    """TOOL-5: a flipped bit in a snapshot or in a committed batch; a frame that is no record."""
    [snapshot] = sorted((orders / "snapshots").glob("*.snapshot"))
    copy = tmp_path / snapshot.name
    data = bytearray(snapshot.read_bytes())
    data[60] ^= 0x01
    copy.write_bytes(bytes(data))
    with pytest.raises(SourceError, match=re.escape(f"{copy}: byte 34, the batch of records 0 on: corrupt: CRC mismatch")):
        load(copy)
    segment = sorted((orders / "log").glob("*.log"))[0]
    data = bytearray(segment.read_bytes())
    data[30] ^= 0x01
    segment.write_bytes(bytes(data))
    with pytest.raises(SourceError, match=re.escape(f"{segment}: byte 0, the batch at offset 0: corrupt: CRC mismatch")):
        load(orders)
    odd = tmp_path / "odd"
    SnapshotStore(odd).write(5, [b"\x00\x63\x00"])
    with pytest.raises(SourceError, match=r"record 0 of the snapshot .*byte 1 of its frame: unknown record type 99"):
        load(odd / "00000000000000000005.snapshot")


# ---- the shell, without a terminal ------------------------------------------------------------------


TREE = Tree({"/brokers/1/epoch": "5", "/brokers/10/epoch": "7", "/brokers/2/epoch": "6", "/features/metadata.format": "1-1",
             "/topics/orders/id": "abc", "/topics/orders/0/leader": "1"})


def run(shell: Shell, line: str) -> tuple[list[str], list[str]]:
    result = shell.run(line)
    return result.out, result.err


def test_tool_5_paths_resolve_like_a_file_system():
    """TOOL-5."""
    assert normalize("/topics/orders", "0/leader") == "/topics/orders/0/leader"
    assert normalize("/topics/orders", "../../brokers/./1//") == "/brokers/1"
    assert normalize("/", "../..") == "/"


def test_tool_5_ls_cd_cat_find_pwd():
    """TOOL-5: numbers in numeric order; relative paths; wildcards."""
    shell = Shell(TREE)
    assert run(shell, "ls") == (["brokers", "features", "topics"], [])
    assert run(shell, "ls /brokers") == (["1", "2", "10"], [])
    assert run(shell, "cd brokers") == ([], []) and run(shell, "pwd") == (["/brokers"], [])
    assert run(shell, "cat 10/epoch ../features/metadata.format") == (["7", "1-1"], [])
    assert run(shell, "cat */epoch") == (["5", "6", "7"], [])
    assert run(shell, "ls 1/epoch /topics") == (["1/epoch", "", "/topics:", "orders"], [])
    assert run(shell, "cd") == ([], []) and shell.cwd == "/"
    assert run(shell, "find /topics") == (
        ["/topics", "/topics/orders", "/topics/orders/0", "/topics/orders/0/leader", "/topics/orders/id"], [])
    assert run(shell, "cd '/topics/orders'") == ([], []) and run(shell, "cat 0/leader") == (["1"], [])


def test_tool_5_errors_are_messages():
    """TOOL-5: no such path, a directory to cat, a file to cd into, an unknown command, bad quoting."""
    shell = Shell(TREE)
    assert run(shell, "cat /nope /brokers/1/epoch") == (["5"], ["cat: /nope: no such file or directory"])
    assert run(shell, "cat /brokers") == ([], ["cat: /brokers: is a directory"])
    assert run(shell, "cd /brokers/1/epoch") == ([], ["cd: /brokers/1/epoch: not a directory"]) and shell.cwd == "/"
    assert run(shell, "frob x")[1] == ["frob: unknown command; the commands are cat, cd, exit, find, help, history, ls, man, pwd (try help)"]
    assert run(shell, "cat 'open")[1][0].startswith("cannot parse \"cat 'open\": No closing quotation")
    assert run(shell, "man nothing")[1][0].startswith("man: no manual for 'nothing'")


def test_tool_5_help_man_history_exit():
    """TOOL-5: the seed's nine commands."""
    shell = Shell(TREE)
    out, _ = run(shell, "help")
    assert out[2] == "usage:  {cat,cd,exit,find,help,history,ls,man,pwd} ..."
    assert any(line.split() == ["ls", "List", "metadata", "nodes."] for line in out)
    assert run(shell, "man find")[0][:3] == ["find: Search for nodes in the directory hierarchy.", "", "usage: find [PATH...]"]
    assert run(shell, "history") == (["    1  help", "    2  man find", "    3  history"], [])
    assert run(shell, "history 1") == (["    4  history 1"], [])
    assert shell.run("exit").exit


def test_tool_5_completion_of_commands_and_paths():
    """TOOL-5."""
    shell = Shell(TREE)
    assert shell.completions("c") == ("c", ["cat", "cd"])
    assert shell.completions("ls /bro") == ("/bro", ["/brokers/"])
    assert shell.completions("cat /brokers/1") == ("/brokers/1", ["/brokers/1/", "/brokers/10/"])
    assert shell.completions("cat /features/") == ("/features/", ["/features/metadata.format"])
    assert shell.completions("man hi") == ("hi", ["history"])
    shell.run("cd /topics")
    assert shell.completions("cd ") == ("", ["orders/"])
    assert shell.completions("cat orders/0/l") == ("orders/0/l", ["orders/0/leader"])


# ---- the command line -------------------------------------------------------------------------------


def test_tool_5_one_shot_commands_and_their_exit_status(orders, capsys):
    """TOOL-5: words after the options, -c (repeatable), an error makes the status 1."""
    assert main(["metadata-shell", "--directory", str(orders), "ls", "/brokers"]) == 0
    assert capsys.readouterr().out == "1\n2\n3\n4\n"
    assert main(["metadata-shell", "-d", str(orders), "-c", "cd /topics/orders", "-c", "cat 0/leader 1/isr"]) == 0
    assert capsys.readouterr().out == "1\n[2,3]\n"
    assert main(["metadata-shell", "-d", str(orders), "cat", "/topics/pending/0/leader"]) == 1
    captured = capsys.readouterr()
    assert captured.err == "cat: /topics/pending/0/leader: no such file or directory\n" and "Traceback" not in captured.err


def test_tool_5_commands_from_standard_input(orders):
    """TOOL-5: each line a command, up to exit."""
    from argparse import Namespace

    from kraftspec.metadata_shell import run as shell_run

    args = Namespace(snapshot=None, directory=str(orders), profile=None, lines=[], words=[], no_history=True)
    out, err = io.StringIO(), io.StringIO()
    status = shell_run(args, stdin=io.StringIO("cd /brokers/4\ncat fenced epoch\nexit\nls\n"), out=out, err=err)
    assert (status, out.getvalue(), err.getvalue()) == (0, "true\n10\n", "")


def test_tool_5_an_unreadable_source_is_status_2_with_a_message(tmp_path, capsys):
    """TOOL-5."""
    bad = tmp_path / "x.snapshot"
    bad.write_bytes(b"nonsense")
    assert main(["metadata-shell", "--snapshot", str(bad), "ls"]) == 2
    assert capsys.readouterr().err == (f"kraftspec metadata-shell: {bad}: byte 0: magic b'nons', expected b'KSS1' "
                                       "(not a snapshot file in kraftspec's format)\n")
    assert main(["metadata-shell", "--directory", str(tmp_path / "none"), "ls"]) == 2
    assert "no such file or directory" in capsys.readouterr().err


# ---- the prompt ---------------------------------------------------------------------------------------


def test_tool_5_the_prompt_runs_commands_and_keeps_its_history_in_the_state_dir(orders, tmp_path):
    """TOOL-5: prompt_toolkit's pipe input; the history survives into the next session, in
    $XDG_STATE_HOME/kraftspec, and --no-history keeps none."""
    from prompt_toolkit.input import create_pipe_input
    from prompt_toolkit.output import DummyOutput

    path = history_file({"XDG_STATE_HOME": str(tmp_path / "state"), "HOME": str(tmp_path / "home")})
    assert path == tmp_path / "state" / "kraftspec" / "metadata-shell-history"
    assert history_file({"HOME": str(tmp_path / "home")}) == tmp_path / "home" / ".local" / "state" / "kraftspec" / "metadata-shell-history"
    tree = Tree(metadata_tree(load_image(orders)))

    def session(keys: str, history: Path | None) -> tuple[str, str]:
        out, err = io.StringIO(), io.StringIO()
        with create_pipe_input() as keyboard:
            keyboard.send_text(keys)
            keyboard.close()  # then the end of input, which ends a session that has not said exit
            assert interactive(Shell(tree), history, out, err, prompt_input=keyboard, prompt_output=DummyOutput()) == 0
        return out.getvalue(), err.getvalue()

    assert session("cd /topics/orders\rcat 0/replicas\rcat nope\rexit\r", path) == ("[1,2]\n", "cat: nope: no such file or directory\n")
    out, _ = session("history\r", path)  # the session ends at the end of input
    assert out == "    1  cd /topics/orders\n    2  cat 0/replicas\n    3  cat nope\n    4  exit\n    5  history\n"
    quiet = tmp_path / "quiet" / "history"
    out, _ = session("pwd\rhistory\r", None)
    assert out == "/\n    1  pwd\n    2  history\n" and not quiet.exists()


def test_tool_5_the_prompt_completes_commands_and_paths_on_a_terminal(orders, tmp_path):
    """TOOL-5: the real command on a pty: Tab completes a command and a path; nothing is written
    into the metadata directory, the history goes to $XDG_STATE_HOME."""
    before = files_of(orders)
    env = dict(os.environ, XDG_STATE_HOME=str(tmp_path / "state"), PROMPT_TOOLKIT_NO_CPR="1", TERM="xterm",
               COLUMNS="100", LINES="30")
    master, slave = pty.openpty()
    process = subprocess.Popen([sys.executable, "-m", "kraftspec", "metadata-shell", "-d", str(orders)],
                               stdin=slave, stdout=slave, stderr=slave, env=env, close_fds=True)
    os.close(slave)
    screen = Screen(master)
    try:
        screen.until("/ >>")
        os.write(master, b"ls /bro\t")
        screen.until("ls /brokers/")  # the path completed
        os.write(master, b"\r")
        screen.until("\n1\n2\n3\n4\n")
        os.write(master, b"pw\t")
        screen.until("pwd")  # the command completed
        os.write(master, b"\rcd /topics/ord\t")
        screen.until("cd /topics/orders/")
        os.write(master, b"\rcat 1/lea\t")
        screen.until("cat 1/leader")
        os.write(master, b"\r")
        screen.until("\n2\n")
        os.write(master, b"exit\r")
        assert process.wait(timeout=60) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        os.close(master)
    assert files_of(orders) == before
    kept = (tmp_path / "state" / "kraftspec" / "metadata-shell-history").read_text()
    assert [line[1:] for line in kept.splitlines() if line.startswith("+")] == ["ls /brokers/", "pwd", "cd /topics/orders/", "cat 1/leader", "exit"]


class Screen:
    """What a pty shows, without the terminal's escape sequences, read as far as asked."""

    ESCAPES = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b[>=]|\r")

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.raw = b""
        self.seen = 0

    def until(self, text: str, timeout: float = 60) -> None:
        while True:
            plain = self.ESCAPES.sub("", self.raw.decode("utf-8", "replace"))
            at = plain.find(text, self.seen)
            if at >= 0:
                self.seen = at + len(text)
                return
            ready, _, _ = select.select([self.fd], [], [], timeout)
            if not ready:
                raise AssertionError(f"the terminal never showed {text!r}; after what was read it shows {plain[self.seen:]!r}")
            try:
                self.raw += os.read(self.fd, 4096)
            except OSError as error:  # the process ended and closed the terminal
                raise AssertionError(f"the terminal closed before showing {text!r}: {plain[self.seen:]!r}") from error
