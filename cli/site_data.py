"""What ``kraftspec site`` shows beside each rule, gathered from the sources that carry it: the
model's citing calls, the tests named after the rule, the proof obligations and guard removals
that concern it, the corpus traces that fire it, its coverage, and the profile parameters that
name it. Nothing here is written by hand, so none of it can fall behind the code.

The model and the proofs are read from the installed package, the corpus from the package's data;
the tests only exist in a checkout (``tests/`` beside ``model/``), and are left out otherwise.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any
from urllib.parse import quote

from attrs import field, frozen

KIP_PAGE = "https://cwiki.apache.org/confluence/display/KAFKA/KIP-631%3A+The+Quorum-based+Kafka+Controller"
"""The public page of seed 000 (KIP-631, latest version)."""

ID = re.compile(r"\b([A-Z]{2,10})-(\d{1,3})\b")
NOT_IDS = frozenset({"KIP", "KAFKA", "UTF", "SHA", "RFC", "ISO", "JIRA", "HTTP", "PEP", "CVE"})
"""Prefixes of ids that are not the specification's (KIP-631, KAFKA-12345, UTF-8, ...)."""
PROOF_IDS = frozenset({"TIME", "LEMMA"})
"""Prefixes of the proofs' own theorem and lemma ids (proofs/timing.py, proofs/inductive.py)."""

MAX_TRACES = 2  # corpus traces shown per rule
MAX_STORY_STEPS = 12  # steps of a trace's story, ending at the first step that fires the rule
MAX_LINE = 150  # characters of one line of a story
FRAGMENT_WORDS = 4  # a long quotation is found on the KIP page by its first and last words


@frozen
class Site:
    """A place in a source file: ``path`` relative to the repository, 1-based ``line``."""

    path: str
    line: int
    function: str  # the enclosing function or class ("" at module level)
    text: str  # the source line, stripped


@frozen
class Coverage:
    traces: int  # traces that reached the rule
    steps: int  # steps (or firings) that fired it
    total: int  # traces in the run or corpus
    source: str  # where the counts come from, in words


@frozen
class ProofLine:
    what: str  # in words
    result: str  # "proved", "failed", ..., or "not run"
    fine: bool = True  # the result is the one the check wants


@frozen
class Evidence:
    citations: dict[str, list[Site]] = field(factory=dict)
    mentions: dict[str, list[Site]] = field(factory=dict)  # model lines naming the id outside citing calls
    tests: dict[str, list[str]] = field(factory=dict)
    test_note: str = ""  # why there are no tests to show, when there are none at all
    traces: dict[str, list[tuple[str, str, str, list[int]]]] = field(factory=dict)  # name, description, story, marked lines
    coverage: dict[str, Coverage] = field(factory=dict)
    runtime: frozenset[str] = frozenset()  # the rules a trace can fire
    proofs: dict[str, list[ProofLine]] = field(factory=dict)
    proof_code: dict[str, list[Site]] = field(factory=dict)
    proofs_run: str = ""  # where the results come from, or "" when not run
    not_fired: dict[str, str] = field(factory=dict)  # the ids no trace fires, with what checks them instead


class SiteInputError(ValueError):
    """An input file of the site build that cannot be used; the message names it."""


def repository_root() -> Path:
    """The folder that holds ``model/`` (a checkout, for an editable install)."""
    from kraftspec.conformance.coverage import model_dir

    return model_dir().parent


def relative(path: Path) -> str:
    try:
        return path.resolve().relative_to(repository_root().resolve()).as_posix()
    except ValueError:
        return path.as_posix()


# ---- the model -----------------------------------------------------------------------------


def _functions_by_line(tree: ast.AST) -> list[tuple[int, int, str]]:
    """(first line, last line, qualified name) of every function and class, outermost first."""
    found: list[tuple[int, int, str]] = []

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = f"{prefix}{child.name}"
                found.append((child.lineno, child.end_lineno or child.lineno, name))
                visit(child, name + ".")
            else:
                visit(child, prefix)

    visit(tree, "")
    return found


def _enclosing(functions: list[tuple[int, int, str]], line: int) -> str:
    inside = [name for first, last, name in functions if first <= line <= last]
    return inside[-1] if inside else ""


def model_sites(spec_ids: Iterable[str]) -> tuple[dict[str, list[Site]], dict[str, list[Site]]]:
    """The citing calls of model/*.py by rule id (as conformance/coverage.py reads them: cite,
    reject and local helpers that pass a rule id on), and, apart, the other lines that name an id."""
    from kraftspec.conformance.coverage import citation_sites, model_dir

    known = set(spec_ids)
    citations: dict[str, list[Site]] = {}
    mentions: dict[str, list[Site]] = {}
    for path in sorted(model_dir().glob("*.py")):
        source = path.read_text(encoding="utf-8")
        lines = source.splitlines()
        functions = _functions_by_line(ast.parse(source))
        cited_lines: set[tuple[str, int]] = set()
        for rule_id, line in citation_sites(source):
            site = Site(f"model/{path.name}", line, _enclosing(functions, line), lines[line - 1].strip())
            citations.setdefault(rule_id, []).append(site)
            cited_lines.add((rule_id, line))
        for number, text in enumerate(lines, 1):
            for match in ID.finditer(text):
                rule_id = match.group()
                if rule_id in known and (rule_id, number) not in cited_lines:
                    sites = mentions.setdefault(rule_id, [])
                    if not sites or sites[-1].line != number or sites[-1].path != f"model/{path.name}":
                        sites.append(Site(f"model/{path.name}", number, _enclosing(functions, number), text.strip()))
    return citations, mentions


# ---- the tests -----------------------------------------------------------------------------


def test_names(tests_dir: Path) -> list[str]:
    """Every test of ``tests_dir/test_*.py`` as ``tests/FILE::NAME`` (``::CLASS::NAME`` for methods)."""
    found = []
    for path in sorted(tests_dir.glob("test_*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("test_"):
                found.append(f"tests/{path.name}::{node.name}")
            elif isinstance(node, ast.ClassDef) and node.name.startswith("Test"):
                for item in node.body:
                    if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and item.name.startswith("test_"):
                        found.append(f"tests/{path.name}::{node.name}::{item.name}")
    return found


def tests_named_after(rule_id: str, names: list[str]) -> list[str]:
    """The tests whose name carries the rule id in snake case as a whole word (``test_lease_8_...``,
    as tests/test_spec_coverage.py counts them), those that start with it first."""
    snake = rule_id.lower().replace("-", "_")
    word = re.compile(rf"(?<![a-z0-9]){snake}(?![0-9])")
    matching = [n for n in names if word.search(n.rpartition("::")[2])]
    return sorted(matching, key=lambda n: not n.rpartition("::")[2].startswith(f"test_{snake}_"))


# ---- the corpus ----------------------------------------------------------------------------


def corpus_dir() -> Path:
    import kraftspec.conformance

    return Path(kraftspec.conformance.__file__).parent / "corpus"


def _value(value: Any) -> str:
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}={_value(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _fields(data: dict[str, Any]) -> str:
    return ", ".join(f"{k}={_value(v)}" for k, v in data.items() if k != "frame")


def _cut(text: str) -> str:
    return text if len(text) <= MAX_LINE else text[: MAX_LINE - 3] + "..."


def story(trace, rule_id: str) -> tuple[str, list[int]]:
    """A trace told as ``kraftspec explain`` tells a scenario, step by step (the event, the records
    appended, the replies released, the rules that fired), up to the first step that fires
    ``rule_id``, at most MAX_STORY_STEPS steps; and the lines of that step, 1-based."""
    steps = list(trace.steps)
    last = next((i for i, s in enumerate(steps) if rule_id in s.rules), len(steps) - 1)
    first = max(0, last - MAX_STORY_STEPS + 1)
    lines: list[str] = []
    if first:
        lines.append(f"... {first} earlier steps")
    marked: list[int] = []
    indent = " " * 7
    for step in steps[first: last + 1]:
        start = len(lines) + 1
        event = step.event
        kind = event["kind"]
        if kind == "request":
            seq = f"#{step.seq} " if step.seq is not None else ""
            lines.append(_cut(f"[{step.n:4}] request {seq}{event['api']} v{event['version']}({_fields(event['body'])})"))
        elif kind == "tick":
            lines.append(f"[{step.n:4}] tick    t={event['now_ms'] / 1000:.3f}s")
        elif kind == "commit":
            lines.append(f"[{step.n:4}] commit  up to offset {event['offset']}")
        else:
            lines.append(f"[{step.n:4}] {kind}")
        for record in step.records:
            lines.append(_cut(f"{indent}record  @{record['offset']} {record['type']}({_fields(record['data'])})"))
        for reply in step.replies:
            lines.append(_cut(f"{indent}reply   #{reply['seq']} {reply['api']}({_fields(reply['body'])})"))
        lines.append(_cut(f"{indent}rules   {' '.join(step.rules) or '-'}"))
        if rule_id in step.rules:
            marked = list(range(start, len(lines) + 1))
    return "\n".join(lines), marked


def corpus_traces(spec_ids: Iterable[str], conform_summary: dict | None = None) -> tuple[
        dict[str, list[tuple[str, str, str, list[int]]]], dict[str, Coverage], frozenset[str]]:
    """For each rule, the first corpus traces that fire it, as stories (those whose description
    names the rule first, then the shortest), and its coverage: from a conform run's summary.json if
    given, else the corpus's own counts (conformance/coverage.py)."""
    from kraftspec.conformance.coverage import coverage, runtime_rules
    from kraftspec.conformance.trace import read_all

    entries = sorted(read_all([corpus_dir()]), key=lambda e: (len(e[1].steps), e[1].name))
    chosen: dict[str, list] = {}
    for rule_id in spec_ids:
        firing = [t for _, t in entries if any(rule_id in s.rules for s in t.steps)]
        named = [t for t in firing if re.match(rf"{re.escape(rule_id)}\b", t.header.description)]
        picked = (named + [t for t in firing if t not in named])[:MAX_TRACES]
        chosen[rule_id] = [(t.name, t.header.description, *story(t, rule_id)) for t in picked]
    runtime = frozenset(runtime_rules())
    counts: dict[str, Coverage] = {}
    if conform_summary is not None:
        total = conform_summary.get("traces", 0)
        where = f"the conform run given ({total:,} traces)"
        for rule_id in runtime:
            found = conform_summary.get("rules", {}).get(rule_id, {})
            counts[rule_id] = Coverage(found.get("traces", 0), found.get("firings", found.get("steps", 0)), total, where)
    else:
        report = coverage(t for _, t in entries)
        where = f"the regression corpus ({report.trace_count} traces)"
        for rule_id in runtime:
            counts[rule_id] = Coverage(report.traces.get(rule_id, 0), report.steps.get(rule_id, 0), report.trace_count, where)
    return chosen, counts, runtime


def read_conform_summary(path: Path) -> dict:
    """A summary.json of ``kraftspec conform``, checked for the fields the site reads."""
    data = _read_json(path, "--conform-summary")
    rules = data.get("rules") if isinstance(data, dict) else None
    if not isinstance(rules, dict) or not isinstance(data.get("traces"), int):
        raise SiteInputError(f"--conform-summary {path}: field 'rules' (an object) or 'traces' (a number) is missing; "
                             "give the summary.json that kraftspec conform writes in its output folder")
    for rule_id, counts in rules.items():
        if not isinstance(counts, dict) or not isinstance(counts.get("traces"), int):
            raise SiteInputError(f"--conform-summary {path}: field 'rules.{rule_id}.traces' is {counts!r}, "
                                 "expected a number of traces")
    return data


def _read_json(path: Path, option: str) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as problem:
        raise SiteInputError(f"{option} {path}: cannot be read: {problem.strerror or problem}") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as problem:
        raise SiteInputError(f"{option} {path}: line {problem.lineno}: not JSON: {problem.msg}") from None


# ---- the proofs ----------------------------------------------------------------------------


def read_proof_results(path: Path) -> dict:
    """The JSON that ``kraftspec prove --json FILE`` writes, checked for the fields the site reads."""
    data = _read_json(path, "--proofs")
    if not isinstance(data, dict) or not isinstance(data.get("obligations"), list):
        raise SiteInputError(f"--proofs {path}: field 'obligations' (a list) is missing; give the file that "
                             "kraftspec prove --json FILE writes")
    for index, item in enumerate(data["obligations"]):
        for key in ("subject", "transition", "result"):
            if not isinstance(item, dict) or not isinstance(item.get(key), str):
                raise SiteInputError(f"--proofs {path}: field 'obligations[{index}].{key}' is "
                                     f"{item.get(key) if isinstance(item, dict) else item!r}, expected text")
    return data


def _guard_rule(guard: str) -> str:
    return guard.partition("/")[0]  # PART-3/unfenced guards PART-3


def proof_lines(spec_ids: Iterable[str], results: dict | None) -> dict[str, list[ProofLine]]:
    """What ``kraftspec prove`` checks about each id: an invariant's obligations (one per transition
    and profile) and the guard removals that name the rule as the guard or as the invariant that
    must break; with the results of ``results`` (``kraftspec prove --json``), else "not run"."""
    from kraftspec.proofs.guards import cases
    from kraftspec.proofs.inductive import NOT_ENCODED, STATE_INVARIANTS

    found: dict[str, list[ProofLine]] = {}
    known = set(spec_ids)
    if results is None:
        for inv_id in STATE_INVARIANTS:
            found.setdefault(inv_id, []).append(ProofLine("proved inductive: one obligation per transition and profile", "not run"))
        for inv_id, reason in NOT_ENCODED.items():
            found.setdefault(inv_id, []).append(ProofLine(f"not encoded: {reason}", "not encoded"))
        for removal, profile in cases():
            line = ProofLine(f"guard removal: without the {removal.guard} guard in {removal.transition} ({profile}), "
                             f"{removal.breaks} must fail: {removal.description}", "not run")
            for rule_id in {_guard_rule(removal.guard), removal.breaks}:
                found.setdefault(rule_id, []).append(line)
        return {k: v for k, v in found.items() if k in known}
    by_subject: dict[str, dict[str, int]] = {}
    for item in results.get("obligations", []):
        subject = item["subject"]
        if subject not in known:
            continue
        if item["result"] == "not encoded":
            found.setdefault(subject, []).append(ProofLine(f"not encoded: {item.get('detail', '')}", "not encoded"))
        elif item["result"] == "proved":
            tally = by_subject.setdefault(subject, {})
            tally[item.get("profile") or "-"] = tally.get(item.get("profile") or "-", 0) + 1
        else:
            found.setdefault(subject, []).append(ProofLine(
                f"obligation {item['transition']} ({item.get('profile') or '-'}): {item.get('detail', '')}".rstrip(": "),
                item["result"], fine=False))
    for subject, tally in by_subject.items():
        profiles = ", ".join(f"{n} for {p}" for p, n in sorted(tally.items()))
        found.setdefault(subject, []).insert(0, ProofLine(f"inductive: {sum(tally.values())} obligations ({profiles})", "proved"))
    for row in results.get("guards", []) or []:
        if not isinstance(row, dict):
            continue
        caught = bool(row.get("caught"))
        line = ProofLine(f"guard removal: without the {row.get('guard')} guard in {row.get('transition')} "
                         f"({row.get('profile')}), {row.get('breaks')} must fail: {row.get('description')}",
                         "fails, as it must" if caught else f"still {row.get('result')}", fine=caught)
        for rule_id in {_guard_rule(str(row.get("guard"))), str(row.get("breaks"))}:
            if rule_id in known:
                found.setdefault(rule_id, []).append(line)
    return found


def proof_code(spec_ids: Iterable[str]) -> dict[str, list[Site]]:
    """The lines of proofs/*.py that name each id: where the encoding mirrors the rule."""
    import kraftspec.proofs

    known = set(spec_ids)
    found: dict[str, list[Site]] = {}
    for path in sorted(Path(kraftspec.proofs.__file__).parent.glob("*.py")):
        source = path.read_text(encoding="utf-8")
        functions = _functions_by_line(ast.parse(source))
        for number, text in enumerate(source.splitlines(), 1):
            for rule_id in dict.fromkeys(m.group() for m in ID.finditer(text)):
                if rule_id in known:
                    found.setdefault(rule_id, []).append(Site(f"proofs/{path.name}", number, _enclosing(functions, number), text.strip()))
    return found


# ---- seed 000 on the KIP page --------------------------------------------------------------


def _fragment_part(text: str) -> str:
    return quote(text, safe="").replace("-", "%2D")


def kip_quotes(source: str) -> list[tuple[str, str]]:
    """The words a Source line quotes from seed 000 (double-quoted, inside the parentheses after a
    heading), each with a link to the KIP page that scrolls to it (a text fragment; where the
    quotation leaves words out with ``...``, from its first words to its last)."""
    text = " ".join(re.sub(r"`[^`]*`", lambda m: " " * len(m.group()), source).split())
    found = []
    for match in re.finditer(r"\bseed (\d{3})\b", text):
        if match.group(1) != "000":
            continue
        rest = text[match.end():]
        stop = re.search(r"\bseed \d{3}\b|\bdecisions? DEC-|;", rest)
        segment = rest[: stop.start()] if stop else rest
        for group in _parentheses(segment):
            for quoted in re.findall(r'"([^"]+)"', group):
                pieces = [p.strip(" .,") for p in re.split(r"\s*(?:\.\.\.|\u2026)\s*", quoted) if p.strip(" .,")]
                if not pieces:
                    continue
                words = [piece.split() for piece in pieces]
                if len(words) == 1 and len(words[0]) <= 2 * FRAGMENT_WORDS:
                    fragment = _fragment_part(" ".join(words[0]))
                else:  # from its first words to its last
                    fragment = (_fragment_part(" ".join(words[0][:FRAGMENT_WORDS])) + ","
                                + _fragment_part(" ".join(words[-1][-FRAGMENT_WORDS:])))
                found.append((quoted, f"{KIP_PAGE}#:~:text={fragment}"))
    return found


def _parentheses(text: str) -> list[str]:
    """The contents of the outermost parentheses of ``text``."""
    groups, depth, start = [], 0, 0
    for i, char in enumerate(text):
        if char == "(":
            if depth == 0:
                start = i + 1
            depth += 1
        elif char == ")" and depth:
            depth -= 1
            if depth == 0:
                groups.append(text[start:i])
    return groups


# ---- everything ----------------------------------------------------------------------------


def gather(spec_ids: list[str], proofs: dict | None = None, conform_summary: dict | None = None,
           proofs_from: str = "") -> Evidence:
    citations, mentions = model_sites(spec_ids)
    tests_dir = repository_root() / "tests"
    tests: dict[str, list[str]] = {}
    note = ""
    if tests_dir.is_dir():
        names = test_names(tests_dir)
        tests = {rule_id: tests_named_after(rule_id, names) for rule_id in spec_ids}
    else:
        note = "the tests are not installed with the package: build the site from a checkout to list them"
    from kraftspec.conformance.coverage import checked_by_tests_only

    traces, counts, runtime = corpus_traces(spec_ids, conform_summary)
    return Evidence(citations, mentions, tests, note, traces, counts, runtime, proof_lines(spec_ids, proofs),
                    proof_code(spec_ids), proofs_from, checked_by_tests_only())
