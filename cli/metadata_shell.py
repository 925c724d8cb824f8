"""``kraftspec metadata-shell``: browse the metadata a snapshot or a metadata log directory holds,
as a tree of directories and files (TOOL-5; the tree is model/tools.py's metadata_tree).

The shell itself (:class:`Shell`: paths, ``ls``, ``cd``, ``cat``, ``find``, ``pwd``, ``history``,
``man``, ``help``, ``exit``, and what to complete) does no I/O: it takes a command line and returns
the text to print, so it is tested without a terminal. :func:`interactive` puts it behind
prompt_toolkit (line editing, tab completion of commands and paths, a persistent history);
:func:`run` is the command line: one-shot commands, commands on standard input, or the prompt.
"""

from __future__ import annotations

import argparse
import fnmatch
import os
import shlex
import sys
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

# ---- the tree ---------------------------------------------------------------------------------


def _name_key(name: str) -> tuple[int, int, str]:
    """Numbers in numeric order (broker 2 before broker 10), then names."""
    return (0, int(name), "") if name.isdigit() else (1, 0, name)


class Tree:
    """The files of TOOL-5 (path -> contents) and the directories their paths imply."""

    def __init__(self, files: dict[str, str]) -> None:
        self.files = dict(files)
        children: dict[str, set[str]] = {"/": set()}
        for path in files:
            parts = path.strip("/").split("/")
            for depth in range(len(parts)):
                parent = "/" + "/".join(parts[:depth])
                children.setdefault(parent, set()).add(parts[depth])
        self.dirs = {d: sorted(names, key=_name_key) for d, names in children.items()}

    def is_dir(self, path: str) -> bool:
        return path in self.dirs

    def is_file(self, path: str) -> bool:
        return path in self.files

    def exists(self, path: str) -> bool:
        return path in self.dirs or path in self.files

    def children(self, path: str) -> list[str]:
        return self.dirs.get(path, [])

    def walk(self, path: str) -> Iterator[str]:
        """``path`` and everything under it, depth first."""
        yield path
        for name in self.children(path):
            yield from self.walk(join(path, name))


def join(directory: str, name: str) -> str:
    return directory.rstrip("/") + "/" + name


def normalize(cwd: str, path: str) -> str:
    """``path`` (absolute, or relative to ``cwd``) as an absolute path without ``.``, ``..`` or ``//``."""
    parts: list[str] = [] if path.startswith("/") else [p for p in cwd.split("/") if p]
    for part in path.split("/"):
        if part in ("", "."):
            continue
        if part == "..":
            if parts:
                parts.pop()
        else:
            parts.append(part)
    return "/" + "/".join(parts)


# ---- the shell --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Command:
    name: str
    summary: str
    usage: str
    manual: str


COMMANDS = {c.name: c for c in (
    Command("cat", "Show the contents of metadata nodes.", "cat PATH...",
            "Print the contents of each file named. Paths are absolute or relative to the working directory, "
            "and may use the wildcards * ? and [...] in any component."),
    Command("cd", "Set the current working directory.", "cd [PATH]",
            "Make PATH the working directory; with no PATH, the root (/)."),
    Command("exit", "Exit the metadata shell.", "exit", "Leave the shell (Ctrl-D does the same)."),
    Command("find", "Search for nodes in the directory hierarchy.", "find [PATH...]",
            "Print every path at or under each PATH (default: the working directory), one a line, depth first."),
    Command("help", "Display this help message.", "help", "List the commands."),
    Command("history", "Print command history.", "history [N]",
            "Print the commands entered so far, numbered; with N, only the last N. At the prompt the history "
            "is kept between sessions, unless the shell was started with --no-history."),
    Command("ls", "List metadata nodes.", "ls [PATH...]",
            "List the entries of each directory named (default: the working directory), one a line; a file is "
            "listed by its name. With several paths, each directory's listing is headed by its path."),
    Command("man", "Show the help text for a specific command.", "man COMMAND", "Show the manual of COMMAND."),
    Command("pwd", "Print the current working directory.", "pwd", "Print the working directory."),
)}

TREE_DESCRIPTION = (
    "The tree: /brokers/ID/ (incarnationId, epoch, fenced, endpoints, features, rack), /features/NAME "
    "(the finalized level range), /topics/NAME/ (id, and a directory per partition: replicas, isr, "
    "addingReplicas, removingReplicas, leader, leaderEpoch, partitionEpoch)."
)


@dataclass
class Result:
    """What a command line printed, whether it failed, and whether the shell should end."""

    out: list[str] = field(default_factory=list)
    err: list[str] = field(default_factory=list)
    exit: bool = False

    @property
    def ok(self) -> bool:
        return not self.err


class Shell:
    """The metadata shell over a :class:`Tree`, without I/O. ``history`` gives the commands entered
    so far (the session's own list unless the caller keeps a history of its own)."""

    def __init__(self, tree: Tree, history: Callable[[], list[str]] | None = None) -> None:
        self.tree = tree
        self.cwd = "/"
        self.entered: list[str] = []
        self.history = history or (lambda: list(self.entered))

    # ---- running a line ----

    def run(self, line: str) -> Result:
        result = Result()
        if not line.strip():
            return result
        self.entered.append(line)
        try:
            words = shlex.split(line, comments=True)
        except ValueError as error:
            result.err.append(f"cannot parse {line!r}: {error}")
            return result
        if not words:
            return result
        name, args = words[0], words[1:]
        if name not in COMMANDS:
            result.err.append(f"{name}: unknown command; the commands are {', '.join(COMMANDS)} (try help)")
            return result
        getattr(self, f"_{name}")(args, result)
        return result

    def expand(self, arg: str) -> list[str]:
        """The absolute paths ``arg`` names: itself, or every existing path its wildcards match."""
        if not any(c in arg for c in "*?["):
            return [normalize(self.cwd, arg)]
        matches = ["/"]
        for part in normalize(self.cwd, arg).strip("/").split("/"):
            matches = [join(m, name) for m in matches for name in self.tree.children(m) if fnmatch.fnmatchcase(name, part)]
        return matches

    def _targets(self, command: str, args: list[str], result: Result) -> list[tuple[str, str]]:
        """(as given, absolute path) of each argument's matches; an error for each that names nothing."""
        found = []
        for arg in args:
            paths = [p for p in self.expand(arg) if self.tree.exists(p)]
            if not paths:
                result.err.append(f"{command}: {arg}: no such file or directory")
            found += [(arg if len(paths) == 1 and not any(c in arg for c in "*?[") else p, p) for p in paths]
        return found

    def _ls(self, args: list[str], result: Result) -> None:
        targets = self._targets("ls", args, result) if args else [(".", self.cwd)]
        files = [shown for shown, path in targets if self.tree.is_file(path)]
        dirs = [(shown, path) for shown, path in targets if self.tree.is_dir(path)]
        result.out += files
        for index, (shown, path) in enumerate(dirs):
            if len(targets) > 1:
                if files or index:
                    result.out.append("")
                result.out.append(f"{shown}:")
            result.out += self.tree.children(path)

    def _cat(self, args: list[str], result: Result) -> None:
        if not args:
            result.err.append(f"cat: which file? usage: {COMMANDS['cat'].usage}")
        for shown, path in self._targets("cat", args, result):
            if self.tree.is_dir(path):
                result.err.append(f"cat: {shown}: is a directory")
            else:
                result.out.append(self.tree.files[path])

    def _cd(self, args: list[str], result: Result) -> None:
        if len(args) > 1:
            result.err.append(f"cd: one path at most; usage: {COMMANDS['cd'].usage}")
            return
        targets = self._targets("cd", args, result) if args else [("/", "/")]
        if not targets:
            return
        if len(targets) > 1:
            result.err.append(f"cd: {args[0]}: names {len(targets)} paths")
            return
        shown, path = targets[0]
        if not self.tree.is_dir(path):
            result.err.append(f"cd: {shown}: not a directory")
            return
        self.cwd = path

    def _find(self, args: list[str], result: Result) -> None:
        for _, path in self._targets("find", args, result) if args else [(".", self.cwd)]:
            result.out += list(self.tree.walk(path))

    def _pwd(self, args: list[str], result: Result) -> None:
        result.out.append(self.cwd)

    def _history(self, args: list[str], result: Result) -> None:
        entries = self.history()
        if args:
            if len(args) != 1 or not args[0].isdigit():
                result.err.append(f"history: expected a number of entries, got {' '.join(args)!r}")
                return
            first = max(0, len(entries) - int(args[0]))
        else:
            first = 0
        result.out += [f"{n + 1:5}  {entry}" for n, entry in enumerate(entries) if n >= first]

    def _help(self, args: list[str], result: Result) -> None:
        result.out.append("Welcome to the kraftspec metadata shell.")
        result.out.append("")
        result.out.append(f"usage:  {{{','.join(COMMANDS)}}} ...")
        result.out.append("")
        result.out += [f"    {c.name:<20} {c.summary}" for c in COMMANDS.values()]
        result.out += ["", TREE_DESCRIPTION]

    def _man(self, args: list[str], result: Result) -> None:
        if len(args) != 1 or args[0] not in COMMANDS:
            named = f" {args[0]!r}" if args else ""
            result.err.append(f"man: no manual for{named or ' nothing'}; usage: man COMMAND, one of {', '.join(COMMANDS)}")
            return
        command = COMMANDS[args[0]]
        result.out += [f"{command.name}: {command.summary}", "", f"usage: {command.usage}", "", command.manual]

    def _exit(self, args: list[str], result: Result) -> None:
        result.exit = True

    # ---- completion ----

    def completions(self, before_cursor: str) -> tuple[str, list[str]]:
        """Completing the last word of ``before_cursor``: (that word, the candidates to replace it with).
        The first word is a command; after ``man`` a command; after any other, a path."""
        words = before_cursor.split()
        word = "" if not words or before_cursor[-1:].isspace() else words[-1]
        if len(words) <= 1 and word:
            return word, [name for name in COMMANDS if name.startswith(word)]
        if not words:
            return word, list(COMMANDS)
        if words[0] in ("man", "help"):
            return word, [name for name in COMMANDS if name.startswith(word)]
        head, slash, partial = word.rpartition("/")
        parent = normalize(self.cwd, head + slash) if slash else self.cwd
        prefix = head + slash
        candidates = []
        for name in self.tree.children(parent):
            if name.startswith(partial):
                path = join(parent, name)
                candidates.append(prefix + name + ("/" if self.tree.is_dir(path) else ""))
        return word, candidates


# ---- the terminal -------------------------------------------------------------------------------


def history_file(environ: dict[str, str] | None = None) -> Path:
    """Where the prompt's history lives: $XDG_STATE_HOME/kraftspec, or ~/.local/state/kraftspec."""
    environ = dict(os.environ) if environ is None else environ
    state = environ.get("XDG_STATE_HOME") or str(Path(environ.get("HOME") or Path.home()) / ".local" / "state")
    return Path(state) / "kraftspec" / "metadata-shell-history"


def interactive(shell: Shell, history: Path | None, out: TextIO, err: TextIO, prompt_input=None, prompt_output=None) -> int:
    """The prompt: line editing, tab completion, history (in ``history``, or none when None). Ends
    at ``exit`` or end of input; 0 (an error at the prompt is shown, not fatal)."""
    from prompt_toolkit import PromptSession
    from prompt_toolkit.completion import Completer, Completion
    from prompt_toolkit.history import FileHistory, History, InMemoryHistory

    class ShellCompleter(Completer):
        def get_completions(self, document, complete_event):
            word, candidates = shell.completions(document.text_before_cursor)
            for candidate in candidates:
                yield Completion(candidate, start_position=-len(word))

    store: History = InMemoryHistory()
    earlier: list[str] = []
    if history is not None:
        try:
            history.parent.mkdir(parents=True, exist_ok=True)
            store = FileHistory(str(history))
            earlier = list(reversed(list(store.load_history_strings())))  # oldest first
        except OSError as error:
            print(f"kraftspec metadata-shell: cannot keep the history in {history} ({error.strerror}); "
                  "this session's history is not kept", file=err)
    session: PromptSession[str] = PromptSession(history=store, completer=ShellCompleter(), input=prompt_input,
                                                output=prompt_output, complete_while_typing=False)
    shell.history = lambda: earlier + shell.entered
    while True:
        try:
            line = session.prompt(f"{shell.cwd} >> ")
        except KeyboardInterrupt:
            continue
        except EOFError:
            return 0
        result = shell.run(line)
        _show(result, out, err)
        if result.exit:
            return 0


def _show(result: Result, out: TextIO, err: TextIO) -> None:
    for line in result.out:
        print(line, file=out)
    for line in result.err:
        print(line, file=err)
    out.flush()


def run_lines(shell: Shell, lines: Iterable[str], out: TextIO, err: TextIO) -> int:
    """Run command lines in order, up to ``exit``: 0 if every one succeeded, 1 otherwise."""
    status = 0
    for line in lines:
        result = shell.run(line)
        _show(result, out, err)
        if not result.ok:
            status = 1
        if result.exit:
            break
    return status


# ---- the command line ------------------------------------------------------------------------------


def add_parser(commands) -> None:
    from kraftspec.spec.profiles import profile_names

    shell = commands.add_parser(
        "metadata-shell",
        help="browse the metadata of a snapshot or a metadata log directory as a tree",
        description="Replay the metadata of a snapshot file, or of a metadata log directory written by kraftspec's "
        "controller (its newest valid snapshot, then the committed records of the log after it, as the controller "
        "rebuilds its state at start-up), and browse it as a tree of directories and files: /brokers, /features, "
        "/topics and their partitions. Commands: ls, cd, cat, find, pwd, history, man, help and exit. With a "
        "command (after the options, or with -c) the shell runs it and ends; with standard input that is not "
        "a terminal it runs each line of it; otherwise it prompts, with tab completion of commands and paths "
        "and a history kept in $XDG_STATE_HOME/kraftspec (default ~/.local/state/kraftspec). Nothing in the "
        "snapshot or the directory is changed, so a directory can be read while a controller runs. Exit "
        "status: 0 success, 1 a command failed, 2 the metadata cannot be read.",
        epilog="examples:  kraftspec metadata-shell --directory /var/lib/kraft ls /brokers\n"
        "           kraftspec metadata-shell --snapshot 00000000000000000042.snapshot -c 'cat /topics/orders/0/leader'",
        formatter_class=_Formatter,
    )
    source = shell.add_mutually_exclusive_group(required=True)
    source.add_argument("--snapshot", "-s", metavar="FILE",
                        help="a snapshot file to read: kraftspec's, or one of Apache Kafka's .checkpoint files")
    source.add_argument("--directory", "-d", metavar="DIR",
                        help="a metadata log directory: kraftspec's (log/ and snapshots/ inside it, or one folder holding "
                        "both) or Apache Kafka's __cluster_metadata-0")
    shell.add_argument("--profile", choices=profile_names(), default=None, metavar="NAME",
                       help=f"the behaviour profile whose record formats the metadata is in ({', '.join(profile_names())}; "
                       "default: the one whose frame type the first record carries)")
    shell.add_argument("-c", dest="lines", action="append", default=[], metavar="COMMAND",
                       help="run COMMAND (a whole command line, quoted) and end; may be given more than once")
    shell.add_argument("--no-history", action="store_true", help="do not read or write the prompt's history file")
    shell.add_argument("words", nargs="*", metavar="command", help="a command and its arguments, to run once")


class _Formatter(argparse.HelpFormatter):
    """Keeps the examples' line breaks (the description is wrapped as usual)."""

    def _fill_text(self, text, width, indent):
        if text.startswith("examples:"):
            return "".join(indent + line for line in text.splitlines(keepends=True))
        return super()._fill_text(text, width, indent)


def load_tree(path: str, profile: str | None) -> Tree:
    from kraftspec.metadata_source import load_image
    from kraftspec.model.tools import metadata_tree

    return Tree(metadata_tree(load_image(path, profile)))


def run(args, stdin: TextIO | None = None, out: TextIO | None = None, err: TextIO | None = None) -> int:
    from kraftspec.metadata_source import SourceError

    stdin, out, err = stdin or sys.stdin, out or sys.stdout, err or sys.stderr
    try:
        tree = load_tree(args.snapshot or args.directory, args.profile)
    except SourceError as error:
        print(f"kraftspec metadata-shell: {error}", file=err)
        return 2
    shell = Shell(tree)
    lines = list(args.lines)
    if args.words:
        lines.append(shlex.join(args.words))
    if lines:
        return run_lines(shell, lines, out, err)
    if not stdin.isatty():
        return run_lines(shell, (line.rstrip("\n") for line in stdin), out, err)
    return interactive(shell, None if args.no_history else history_file(), out, err)
