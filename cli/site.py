"""``kraftspec site OUT_DIR``: the specification as a static web site a reviewer can walk.

The pages are spec/*.md as written, with two additions that change no word of them: every rule and
decision heading gets a stable anchor (its id in lower case, ``leases.html#lease-8``), and every id
the prose mentions links to it. After each rule comes what the sources say about it, generated at
build time (cli/site_data.py): the seed 000 words it quotes, linked on the public KIP page; the
model code that cites it; the tests named after it; the proof obligations about it; its coverage;
the corpus traces that fire it, told step by step; and the profile parameters that change it.

The MkDocs project is generated into a temporary folder (or ``--work-dir``), never into the
repository, and built with ``mkdocs build --strict`` (Material theme, built-in search); a broken
link or anchor fails the build, and so does an id that is not the specification's, named with its
page and line. OUT_DIR is a plain static folder: open ``OUT_DIR/index.html``.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from importlib.resources import files
from pathlib import Path

from attrs import frozen

from kraftspec.site_data import (
    ID,
    NOT_IDS,
    PROOF_IDS,
    Evidence,
    Site,
    SiteInputError,
    gather,
    kip_quotes,
    read_conform_summary,
    read_proof_results,
    repository_root,
)

MARKER = ".kraftspec-site"
"""A file ``kraftspec site`` leaves in OUT_DIR, so that it rebuilds into its own output only."""

SEARCH_SEPARATOR = r'[\s,:!=\[\]()"`/]+|(?!\b)(?=[A-Z][a-z])|\.(?!\d)|&[lg]t;'
"""Material's default search separator without the hyphen, so that a rule id (LEASE-8) is one word."""

NAV = (
    ("Home", ("README.md",)),
    ("Rules", ("membership.md", "leases.md", "controlled-shutdown.md", "partitions.md", "reassignment.md", "topics.md",
               "metadata-log.md", "rpcs.md", "operations.md", "invariants.md")),
    ("Decisions", ("decisions.md",)),
    ("Profiles", ("profiles.md",)),
    ("Apache Kafka", ("kafka.md", "version-matrix.md")),
    ("Formats", ("traces.md", "protocol.md")),
)
VERSION_MATRIX = "version-matrix.md"
"""A page of its own for the version matrix: the "Figures" section of kafka.md."""


class SiteBuildError(Exception):
    """The build failed; the message says where and why."""


@frozen
class Heading:
    id: str
    title: str
    page: str  # the generated page's name (README.md is index.md)
    line: int  # in the spec file


def page_name(spec_file: str) -> str:
    return "index.md" if spec_file == "README.md" else spec_file


def html_name(page: str) -> str:
    return page[: -len(".md")] + ".html"


_HEADING = re.compile(r"^### ([A-Z]{2,10}-\d{1,3})\s+(.+?)\s*$")


def rule_url(rule_id: str, spec_file: str, site_url: str) -> str:
    """The address of a rule's anchor on a site built by this command and published at ``site_url``."""
    return f"{site_url.rstrip('/')}/{html_name(page_name(spec_file))}#{rule_id.lower()}"


def spec_headings(spec_dir: Path) -> dict[str, Heading]:
    """Every rule and decision heading of the spec folder's markdown files, by id."""
    found: dict[str, Heading] = {}
    for path in sorted(spec_dir.glob("*.md")):
        in_code = False
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if line.startswith("```"):
                in_code = not in_code
            match = None if in_code else _HEADING.match(line)
            if match:
                found[match.group(1)] = Heading(match.group(1), match.group(2), page_name(path.name), number)
    return found


# ---- markdown ------------------------------------------------------------------------------


_PROTECTED = re.compile(r"`[^`]*`|\[[^\]]*\]\([^)]*\)|<[^>]*>|https?://\S+")
_LINK = re.compile(r"\[([^\]]*)\]\(([^)\s]+)\)")


class Pages:
    """The generated pages: markdown lines, each with the spec line it comes from (None when generated)."""

    def __init__(self, spec_dir: Path, headings: dict[str, Heading], source_url: str | None):
        self.spec_dir = spec_dir
        self.headings = headings
        self.source_url = source_url.rstrip("/") if source_url else None
        self.pages: dict[str, list[tuple[str, int | None]]] = {}
        self.copied: set[str] = set()  # spec files besides the pages that links point to

    def link(self, rule_id: str, page: str, text: str | None = None) -> str:
        heading = self.headings[rule_id]
        where = "" if heading.page == page else heading.page
        return f"[{text or rule_id}]({where}#{rule_id.lower()})"

    def source_link(self, path: str, line: int | None = None) -> str:
        label = f"{path}:{line}" if line else path
        if not self.source_url:
            return f"`{label}`"
        return f"[`{label}`]({self.source_url}/{path}{f'#L{line}' if line else ''})"

    def _target(self, text: str, target: str) -> str:
        """A link of the spec, pointed at the site: a page, an anchor, a copied file or the repository."""
        if re.match(r"[a-z]+:", target) or target.startswith("#"):
            return f"[{text}]({target})"
        path, _, anchor = target.partition("#")
        fragment = f"#{anchor}" if anchor else ""
        if path.endswith(".md") and "/" not in path and (self.spec_dir / path).is_file():
            return f"[{text}]({page_name(path)}{fragment})"
        local = self.spec_dir / path
        inside = ".." not in Path(path).parts
        if inside and local.is_file():
            self.copied.add(path)
            return f"[{text}]({path}{fragment})"
        if inside and not local.is_dir():
            return f"[{text}]({target})"  # a file that is not there: left for the strict build to report
        if self.source_url:
            return f"[{text}]({self.source_url}/{os.path.normpath('spec/' + path).replace(os.sep, '/')}{fragment})"
        return text  # a folder, or a file outside spec/, with no repository to link to: the words alone

    def prose(self, line: str, page: str) -> str:
        """A line of the spec's prose with its links pointed at the site and its ids linked."""
        out, last = [], 0
        for match in _PROTECTED.finditer(line):
            out.append(self._ids(line[last: match.start()], page))
            piece = match.group()
            link = _LINK.fullmatch(piece)
            out.append(self._target(link.group(1), link.group(2)) if link else piece)
            last = match.end()
        out.append(self._ids(line[last:], page))
        return "".join(out)

    def _ids(self, text: str, page: str) -> str:
        return ID.sub(lambda m: self.link(m.group(), page) if m.group() in self.headings else m.group(), text)

    def add_spec_page(self, spec_file: str, evidence: Evidence | None) -> None:
        page = page_name(spec_file)
        lines = (self.spec_dir / spec_file).read_text(encoding="utf-8").splitlines()
        out: list[tuple[str, int | None]] = []
        in_code = False
        current: str | None = None  # the rule whose section this is
        for number, line in enumerate(lines, 1):
            if line.startswith("```"):
                in_code = not in_code
                out.append((line, number))
                continue
            if in_code:
                out.append((line, number))
                continue
            if line.startswith("#"):
                if current and evidence:
                    out += [(text, None) for text in self.evidence(current, page, evidence)]
                current = None
                match = _HEADING.match(line)
                if match:
                    current = match.group(1)
                    out.append((f"{line} {{ #{current.lower()} }}", number))
                else:
                    out.append((line, number))
                continue
            out.append((self.prose(line, page), number))
        if current and evidence:
            out += [(text, None) for text in self.evidence(current, page, evidence)]
        self.pages[page] = out

    def add_version_matrix(self) -> None:
        """The "Figures" section of kafka.md, the measured version matrix, as a page of its own."""
        lines = (self.spec_dir / "kafka.md").read_text(encoding="utf-8").splitlines()
        start = next((i for i, line in enumerate(lines) if line.strip() == "## Figures"), None)
        if start is None:
            return
        end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("## ")), len(lines))
        out: list[tuple[str, int | None]] = [
            ("# The version matrix", None), ("", None),
            ("The traces that pass against each Apache Kafka release, as [the divergence ledger](kafka.md#figures) "
             "gives them (its section Figures).", None), ("", None)]
        in_code = False
        for number in range(start + 1, end):
            line = lines[number]
            if line.startswith("```"):
                in_code = not in_code
            heading = line.startswith("#") and not in_code
            out.append((line if in_code or heading else self.prose(line, VERSION_MATRIX), number + 1))
        self.pages[VERSION_MATRIX] = out

    # ---- what the sources say about a rule ----------------------------------------------------

    def evidence(self, rule_id: str, page: str, e: Evidence) -> list[str]:
        from kraftspec.spec.profiles import parameters, profile_names

        body: list[str] = []
        heading = self.headings[rule_id]
        source = _source_paragraph(self.spec_dir, heading)
        quotes = kip_quotes(source)
        if quotes:
            links = "; ".join(f'[&ldquo;{_escape(q)}&rdquo;]({url})' for q, url in quotes)
            body.append(f"**Seed 000 on the KIP page**: {links}")
        if rule_id.startswith("DEC-"):
            listed = _decision_rules(self.spec_dir, heading)
            if listed:
                body.append("**Rules it lists**: " + ", ".join(self.link(r, page) for r in listed if r in self.headings))
        sites = e.citations.get(rule_id, [])
        if sites:
            body.append(f"**Model code that cites it** ({len(sites)}):")
            body += self._sites(sites)
        else:
            named = e.mentions.get(rule_id, [])
            if named:
                body.append(f"**Model code that names it** (no citing call; {len(named)} lines):")
                body += self._sites(named[:6])
                if len(named) > 6:
                    body.append(f"{len(named) - 6} more lines")
            else:
                body.append("**Model code**: no line of model/ names it")
        if not rule_id.startswith("DEC-"):
            tests = e.tests.get(rule_id, [])
            if tests:
                body.append(f"**Tests named after it** ({len(tests)}):")
                body += [f"- {self.source_link(t) if not self.source_url else self._test_link(t)}" for t in tests]
            else:
                body.append(f"**Tests named after it**: {e.test_note or 'none'}")
        proofs = e.proofs.get(rule_id, [])
        if proofs:
            run = f"results of {e.proofs_run}" if e.proofs_run else (
                "not run: build with --proofs FILE, FILE written by kraftspec prove --json FILE")
            body.append(f"**Proofs** ({run}):")
            body += [f"- {_escape(p.what)}: **{p.result}**" + ("" if p.fine else " (not what the check wants)") for p in proofs]
        code = e.proof_code.get(rule_id, [])
        if code:
            body.append("**Proof encoding that names it**: " + ", ".join(
                self.source_link(s.path, s.line) + (f" (`{s.function}`)" if s.function else "") for s in code[:8])
                + (f", and {len(code) - 8} more" if len(code) > 8 else ""))
        counts = e.coverage.get(rule_id)
        if counts is not None:
            body.append(f"**Coverage**: fired in {counts.traces:,} of {counts.total:,} traces ({counts.steps:,} "
                        f"times) in {counts.source}" + ("" if counts.traces else f": **not reached**{_unreachable(rule_id)}"))
        elif not rule_id.startswith("DEC-"):
            why = e.not_fired.get(rule_id, "")
            body.append(f"**Coverage**: no trace step fires it{f': {_escape(why)}' if why else ''}")
        changed = [p for p in parameters() if rule_id in p.rules or p.decision == rule_id]
        if changed:
            body.append("**How the profiles differ on it**:")
            for p in changed:
                values = ", ".join(f"{name} `{_toml(p.values[name])}`" for name in profile_names())
                body.append(f"- [`{p.name}`](profiles.md#{p.name}) ({self.link(p.decision, page)}): {_escape(p.question)} "
                            f"{values}")
        else:
            body.append("**How the profiles differ on it**: they do not")
        out = ["", f'!!! abstract "{rule_id} in the sources"', ""]
        for i, item in enumerate(body):
            out.append(f"    {item}")
            following = body[i + 1] if i + 1 < len(body) else ""
            if not (item.startswith("- ") and following.startswith("- ")):
                out.append("")  # a paragraph, or the end of a list
        traces = e.traces.get(rule_id, [])
        for name, description, told, marked in traces:
            title = f"Trace {name}" + (f": {description}" if description else "")
            lines = f' hl_lines="{" ".join(map(str, marked))}"' if marked else ""
            out += ["", f'    ??? example "{_attribute(title)}"', "",
                    f"        From conformance/corpus/{name}.jsonl; the highlighted step fires {rule_id}.", "",
                    f"        ```text{lines}"]
            out += [f"        {line}" for line in told.splitlines()]
            out += ["        ```"]
        if not traces and rule_id in e.runtime:
            out += ["", "    No trace of the corpus fires it."]
        out.append("")
        return out

    def _sites(self, sites: list[Site]) -> list[str]:
        return [f"- {self.source_link(s.path, s.line)}" + (f" in `{s.function}`" if s.function else "")
                + f": `{s.text.replace('`', '')[:120]}`" for s in sites]

    def _test_link(self, test: str) -> str:
        path = test.partition("::")[0]
        return f"[`{test}`]({self.source_url}/{path})"

    def write(self, docs: Path) -> None:
        for page, lines in self.pages.items():
            (docs / page).write_text("\n".join(text for text, _ in lines) + "\n", encoding="utf-8")
        for path in sorted(self.copied):
            target = docs / path
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(self.spec_dir / path, target)


def _unreachable(rule_id: str) -> str:
    from kraftspec.conformance.coverage import NOT_REACHABLE_BY_EVENTS

    why = NOT_REACHABLE_BY_EVENTS.get(rule_id)
    return f" (no event can reach it: {_escape(why)})" if why else ""


def _escape(text: str) -> str:
    return text.replace("*", r"\*").replace("_", r"\_").replace("<", "&lt;")


def _attribute(text: str) -> str:
    text = text.replace('"', "'")
    return text if len(text) <= 160 else text[:157] + "..."


def _toml(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, tuple):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    return str(value)


def _section(spec_dir: Path, heading: Heading) -> list[str]:
    name = "README.md" if heading.page == "index.md" else heading.page
    lines = (spec_dir / name).read_text(encoding="utf-8").splitlines()
    end = next((i for i in range(heading.line, len(lines)) if lines[i].startswith("#")), len(lines))
    return lines[heading.line: end]


def _source_paragraph(spec_dir: Path, heading: Heading) -> str:
    """The ``Source:`` paragraph of a rule, or a decision's *Seeds.* paragraph."""
    found: list[str] = []
    for line in _section(spec_dir, heading):
        if not found and (line.startswith("Source:") or line.startswith("*Seeds.*")):
            found.append(line)
        elif found:
            if not line.strip() or re.match(r"\*[A-Z][A-Za-z ]*\.\*", line):
                break
            found.append(line)
    return " ".join(found)


def _decision_rules(spec_dir: Path, heading: Heading) -> list[str]:
    text = " ".join(_section(spec_dir, heading))
    match = re.search(r"\*Rules\.\*(.*?)(?:\*[A-Z][A-Za-z ]*\.\*|$)", text)
    return list(dict.fromkeys(m.group() for m in ID.finditer(match.group(1)))) if match else []


# ---- the ids check -------------------------------------------------------------------------


def unknown_ids(pages: Pages, spec_dir: Path) -> list[str]:
    """Every id a page mentions that is not a rule or decision of the specification, as
    ``PAGE (spec/FILE line N): ID ...``."""
    problems = []
    for page, lines in pages.pages.items():
        for text, origin in lines:
            for match in ID.finditer(text):
                rule_id = match.group()
                if rule_id in pages.headings or match.group(1) in NOT_IDS or match.group(1) in PROOF_IDS:
                    continue
                spec_file = "README.md" if page == "index.md" else ("kafka.md" if page == VERSION_MATRIX else page)
                where = f"{spec_dir / spec_file} line {origin}" if origin else "generated from the sources"
                problems.append(f"page {page} ({where}): {rule_id} is not a rule or decision id of the specification")
    return problems


# ---- MkDocs --------------------------------------------------------------------------------


def mkdocs_config(pages: Pages) -> dict:
    nav: list = []
    for section, names in NAV:
        present = [page_name(n) for n in names if page_name(n) in pages.pages]
        if not present:
            continue
        if len(names) == 1:
            nav.append({section: present[0]})
        else:
            nav.append({section: [{_page_title(pages, p): p} for p in present]})
    listed = {entry for _, names in NAV for entry in map(page_name, names)}
    rest = sorted(p for p in pages.pages if p not in listed)
    if rest:
        nav.append({"More": [{_page_title(pages, p): p} for p in rest]})
    return {
        "site_name": "kraftspec: the KRaft controller's broker lifecycle",
        "docs_dir": "docs",
        "use_directory_urls": False,
        "strict": True,
        "theme": {"name": "material", "font": False, "features": ["navigation.sections", "navigation.top",
                                                                   "search.highlight", "toc.follow"]},
        # no "offline" plugin: it loads a script from a CDN, and the site must work with no network;
        # search needs the site served over HTTP (python -m http.server)
        "plugins": [{"search": {"separator": SEARCH_SEPARATOR}}],
        "markdown_extensions": ["tables", "attr_list", "admonition", "pymdownx.details", "pymdownx.superfences",
                                {"toc": {"permalink": True}}],
        "validation": {"omitted_files": "warn", "absolute_links": "warn", "unrecognized_links": "warn",
                       "anchors": "warn", "nav": {"omitted_files": "warn", "not_found": "warn"}},
        "nav": nav,
    }


def _page_title(pages: Pages, page: str) -> str:
    for text, _ in pages.pages[page]:
        if text.startswith("# "):
            return text[2:].strip()
    return page


def _needs() -> str | None:
    import importlib.util

    missing = [name for name, module in (("mkdocs", "mkdocs"), ("mkdocs-material", "material"))
               if importlib.util.find_spec(module) is None]
    if missing:
        return (f"{' and '.join(missing)} not installed: install them with  pip install 'kraftspec[site]'  "
                "(or pip install mkdocs mkdocs-material)")
    return None


def _inside(path: Path, folder: Path) -> bool:
    try:
        path.resolve().relative_to(folder.resolve())
        return True
    except ValueError:
        return False


def generate(work: Path, spec_dir: Path, source_url: str | None, proofs: dict | None, conform: dict | None,
             proofs_from: str = "", evidence: bool = True) -> Pages:
    """Write the MkDocs project into ``work`` (mkdocs.yml and docs/); raise SiteBuildError for an
    unknown id."""
    headings = spec_headings(spec_dir)
    found = gather(list(headings), proofs, conform, proofs_from) if evidence else None
    pages = Pages(spec_dir, headings, source_url)
    for path in sorted(spec_dir.glob("*.md")):
        pages.add_spec_page(path.name, found)
    if (spec_dir / "kafka.md").is_file():
        pages.add_version_matrix()
    problems = unknown_ids(pages, spec_dir)
    if problems:
        raise SiteBuildError("ids the specification does not define:\n  " + "\n  ".join(problems))
    docs = work / "docs"
    docs.mkdir(parents=True, exist_ok=True)
    pages.write(docs)
    (work / "mkdocs.yml").write_text(json.dumps(mkdocs_config(pages), indent=1) + "\n", encoding="utf-8")
    return pages


def mkdocs_build(work: Path, out: Path, spec_dir: Path) -> None:
    """``mkdocs build --strict``; a warning fails it, reported with the spec file it is about."""
    result = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file", str(work / "mkdocs.yml"),
                             "--site-dir", str(out.resolve())], capture_output=True, text=True, cwd=work)
    if result.returncode != 0:
        lines = [line.strip() for line in (result.stderr + result.stdout).splitlines()
                 if line.startswith(("WARNING", "ERROR")) or "Error" in line]
        shown = [_from_spec(re.sub(r"^(WARNING|ERROR)\s*-\s*", "", line), spec_dir) for line in lines]
        shown = list(dict.fromkeys(shown)) or result.stderr.strip().splitlines()[-5:]
        raise SiteBuildError("mkdocs build --strict failed:\n  " + "\n  ".join(shown))


def _from_spec(message: str, spec_dir: Path) -> str:
    """A MkDocs warning about page P, prefixed with the spec file P comes from."""
    match = re.match(r"Doc file '([^']+)'", message)
    if not match:
        return message
    page = match.group(1)
    spec_file = "README.md" if page == "index.md" else ("kafka.md" if page == VERSION_MATRIX else page)
    return f"{spec_dir / spec_file}: {message}"


def build_site(out: Path, spec_dir: Path | None = None, source_url: str | None = None, proofs: Path | None = None,
               conform_summary: Path | None = None, work_dir: Path | None = None) -> float:
    """Build the site into ``out``; return the seconds it took. SiteBuildError or SiteInputError
    when it cannot."""
    started = time.perf_counter()
    spec_dir = spec_dir or Path(str(files("kraftspec.spec")))
    needed = _needs()
    if needed:
        raise SiteBuildError(needed)
    if not spec_dir.is_dir() or not (spec_dir / "README.md").is_file():
        raise SiteInputError(f"--spec {spec_dir}: not a specification folder (it has no README.md)")
    if out.exists() and (not out.is_dir() or (any(out.iterdir()) and not (out / MARKER).exists())):
        raise SiteInputError(f"OUT_DIR {out}: exists and is not a site this command built; give a new or empty folder "
                             "(the build replaces everything in it)")
    root = repository_root()
    if work_dir is not None:
        if _inside(work_dir, root) and (root / "spec").is_dir():
            raise SiteInputError(f"--work-dir {work_dir}: inside the repository {root}; give a folder outside it")
        if work_dir.exists() and any(work_dir.iterdir()):
            raise SiteInputError(f"--work-dir {work_dir}: exists and is not empty")
    results = read_proof_results(proofs) if proofs else None
    summary = read_conform_summary(conform_summary) if conform_summary else None
    with tempfile.TemporaryDirectory(prefix="kraftspec-site-") as temporary:
        work = work_dir or Path(temporary)
        generate(work, spec_dir, source_url, results, summary, proofs_from=str(proofs) if proofs else "")
        built = Path(temporary) / "site"  # OUT_DIR is touched only once the build has succeeded
        mkdocs_build(work, built, spec_dir)
        (built / MARKER).write_text("built by kraftspec site\n", encoding="utf-8")
        if out.exists():
            for entry in out.iterdir():
                shutil.rmtree(entry) if entry.is_dir() and not entry.is_symlink() else entry.unlink()
        shutil.copytree(built, out, dirs_exist_ok=True)
    return time.perf_counter() - started


# ---- the command ---------------------------------------------------------------------------


def add_parser(commands) -> None:
    site = commands.add_parser(
        "site",
        help="build the specification as a static web site",
        description="Build the specification (spec/*.md) as a static web site with MkDocs and the Material theme: "
        "one page per file, an anchor for every rule and decision (the id in lower case, for example "
        "leases.html#lease-8), and after each rule what the sources say about it: the seed words it quotes, "
        "linked on the KIP page; the model code that cites it; the tests named after it; the proofs about it; "
        "its coverage; the corpus traces that fire it; and how the profiles differ on it. Also the divergence "
        "ledger, the version matrix and the profiles, with search. A broken link or an id the specification "
        "does not define fails the build. Needs MkDocs and Material for MkDocs (pip install 'kraftspec[site]'). "
        "Open OUT_DIR/index.html, or serve the folder with any web server.",
    )
    site.add_argument("out", metavar="OUT_DIR",
                      help="the folder to write the site to; created if missing, and replaced if an earlier build wrote it")
    site.add_argument("--source-url", metavar="URL", default=None,
                      help="the web address of the repository's files, for example https://github.com/OWNER/kraftspec/blob/main; "
                      "code locations and tests then link there (default: they are shown as text, each with its "
                      "source line)")
    site.add_argument("--proofs", metavar="FILE", default=None,
                      help="the results of kraftspec prove --json FILE, shown beside each rule (default: the checks are "
                      "listed as not run)")
    site.add_argument("--run-proofs", action="store_true",
                      help="run kraftspec prove first (about 15 seconds) and show its results beside each rule")
    site.add_argument("--conform-summary", metavar="FILE", default=None,
                      help="the summary.json of a kraftspec conform run, whose rule coverage is shown (default: the "
                      "regression corpus's own coverage)")
    site.add_argument("--spec", metavar="DIR", default=None,
                      help="build from this specification folder instead of the installed one (for a draft)")
    site.add_argument("--work-dir", metavar="DIR", default=None,
                      help="write the generated MkDocs project to this folder, outside the repository, and keep it "
                      "(default: a temporary folder, removed after the build)")


def run(args) -> int:
    if args.run_proofs and args.proofs:
        print("kraftspec site: give --proofs FILE or --run-proofs, not both", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="kraftspec-proofs-") as folder:
        if args.run_proofs:
            args.proofs = str(Path(folder) / "proofs.json")
            proved = subprocess.run([sys.executable, "-m", "kraftspec", "prove", "--json", args.proofs],
                                    stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            if not Path(args.proofs).is_file():
                print(f"kraftspec site: kraftspec prove wrote no results: {proved.stderr.strip()[-500:]}", file=sys.stderr)
                return 1
        return _build(args)


def _build(args) -> int:
    try:
        seconds = build_site(Path(args.out), Path(args.spec) if args.spec else None, args.source_url,
                             Path(args.proofs) if args.proofs else None,
                             Path(args.conform_summary) if args.conform_summary else None,
                             Path(args.work_dir) if args.work_dir else None)
    except (SiteBuildError, SiteInputError) as problem:
        print(f"kraftspec site: {problem}", file=sys.stderr)
        return 2 if isinstance(problem, SiteInputError) else 1
    print(f"kraftspec site: built {args.out} in {seconds:.1f} s; open {Path(args.out) / 'index.html'}")
    return 0
