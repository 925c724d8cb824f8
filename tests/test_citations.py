"""Every quotation the spec attributes to a seed is in that seed, under a section that exists.

The citation form (spec/README.md, "How a rule reads"):

    seed 000, "Broker Leases" ("Once the period has elapsed ..."), "Controlled Shutdown"

``seed NNN`` names a seed document, each ``"Heading"`` after it a section heading of that seed (a
line of the seed on its own), and the double-quoted strings in the parentheses after a heading the
seed's own words, found after that heading; ``...`` leaves words out, so the pieces must appear in
order. Text in the parentheses outside double quotes is commentary; quotation marks inside
backticks are code, not a quotation. In ``Source:`` lines and in the *Seeds.* paragraphs of
decisions, every double-quoted string must be such a heading or quotation: a paraphrase is written
without quotation marks.

The seeds live beside the repository, in ``../shared/seeds/``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SEEDS = ROOT.parent / "shared" / "seeds"
SPEC = ROOT / "spec"

SEED_REF = re.compile(r"\bseed (\d{3})\b", re.I)
CODE_QUOTE = "\x00"
ELLIPSIS = re.compile(r"\s*(?:\.\.\.|\u2026)\s*")


def normalise(text: str) -> str:
    """One space for any run of white space; typographic quotes and dashes as ASCII."""
    for fancy, plain in {"\u00a0": " ", "\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"'}.items():
        text = text.replace(fancy, plain)
    return " ".join(text.split())


@dataclass(frozen=True)
class Seed:
    number: str
    text: str  # normalised
    headings: frozenset[str]


def load_seed(number: str) -> Seed | None:
    found = sorted(SEEDS.glob(f"{number}_*.txt"))
    if not found:
        return None
    raw = found[0].read_text(encoding="utf-8")
    headings = frozenset(normalise(line) for line in raw.splitlines() if line.strip())
    return Seed(number, normalise(raw), headings)


@dataclass(frozen=True)
class Citation:
    where: str  # file:line
    seed: str
    heading: str
    quotes: tuple[str, ...]


@dataclass(frozen=True)
class Paragraph:
    where: str
    text: str  # normalised, backtick spans blanked
    checked: bool  # a Source line or a decision's Seeds paragraph: every quoted string must cite


def paragraphs(path: Path) -> list[Paragraph]:
    """The paragraphs of a spec file (blank-line separated, code blocks left out)."""
    out: list[Paragraph] = []
    lines = path.read_text(encoding="utf-8").splitlines()
    block: list[str] = []
    start = 0
    in_code = False

    def flush() -> None:
        if block:
            # quotation marks inside backticks are code, not quotations
            text = normalise(re.sub(r"`[^`]*`", lambda m: m.group().replace('"', CODE_QUOTE), " ".join(block)))
            for part in split_seeds_paragraph(text):
                out.append(Paragraph(f"{path.name}:{start}", part[0], part[1]))
        block.clear()

    for number, line in enumerate(lines, 1):
        if line.startswith("```"):
            flush()
            in_code = not in_code
            continue
        if in_code:
            continue
        if not line.strip() or line.startswith("#"):
            flush()
            continue
        if line.startswith("Source:") or line.startswith("*Seeds.*"):
            flush()
        if not block:
            start = number
        block.append(line)
    flush()
    return out


def split_seeds_paragraph(text: str) -> list[tuple[str, bool]]:
    """A paragraph as (text, checked) parts: a Source paragraph is checked whole; of a decision's
    paragraph, the *Seeds.* part up to the next *Kafka.* (or other italic label) is checked."""
    if text.startswith("Source:"):
        return [(text, True)]
    if text.startswith("*Seeds.*"):
        label = re.search(r"\*(?!Seeds\.)[A-Z][A-Za-z ]*\.\*", text)
        cut = label.start() if label else len(text)
        return [(text[:cut], True), (text[cut:], False)]
    return [(text, False)]


def read_parenthesis(text: str, i: int) -> tuple[str, int]:
    """The contents of the parenthesis opening at ``text[i]`` and the index after it (quotes and
    nested parentheses respected)."""
    assert text[i] == "("
    depth, j, quoted = 0, i, False
    while j < len(text):
        ch = text[j]
        if ch == '"':
            quoted = not quoted
        elif not quoted and ch == "(":
            depth += 1
        elif not quoted and ch == ")":
            depth -= 1
            if depth == 0:
                return text[i + 1 : j], j + 1
        j += 1
    return text[i + 1 :], len(text)


def parse(paragraph: Paragraph) -> tuple[list[Citation], list[str]]:
    """The citations of a paragraph, and its problems of form."""
    text = paragraph.text
    citations: list[Citation] = []
    problems: list[str] = []
    consumed: list[tuple[int, int]] = []
    for ref in SEED_REF.finditer(text):
        i = ref.end()
        named = False
        while True:
            heading = re.match(r'\s*,\s*"([^"]+)"', text[i:])
            if not heading:
                break
            named = True
            consumed.append((i + heading.start(1) - 1, i + heading.end(1) + 1))
            i += heading.end()
            quotes: list[str] = []
            paren = re.match(r"\s*\(", text[i:])
            if paren:
                start = i + paren.end() - 1
                inside, i = read_parenthesis(text, start)
                for q in re.finditer(r'"([^"]*)"', inside):
                    quotes.append(q.group(1))
                    consumed.append((start + 1 + q.start(), start + 1 + q.end()))
            citations.append(Citation(paragraph.where, ref.group(1), heading.group(1), tuple(quotes)))
        if paragraph.checked and not named and text.startswith("Source:"):
            problems.append(f"{paragraph.where}: {ref.group()} names no section: write {ref.group()}, \"Heading\"")
    if paragraph.checked:
        for q in re.finditer(r'"[^"]*"', text):
            if not any(a <= q.start() and q.end() <= b for a, b in consumed):
                problems.append(
                    f"{paragraph.where}: {q.group()} is in quotation marks but is not a heading or a quotation "
                    "of a cited seed section (quote the seed's words after its section, or drop the quotation marks)"
                )
    return citations, problems


def check(citation: Citation, seed: Seed | None) -> list[str]:
    """What is wrong with one citation: an unknown seed or section, or words the seed does not have."""
    where = f"{citation.where}: seed {citation.seed}, \"{citation.heading}\""
    if seed is None:
        return [f"{where}: no seed {citation.seed} in {SEEDS}"]
    problems = []
    if normalise(citation.heading) not in seed.headings:
        problems.append(f"{where}: seed {citation.seed} has no section heading \"{citation.heading}\"")
    heading_at = seed.text.find(normalise(citation.heading))
    for quote in citation.quotes:
        position = max(heading_at, 0)  # the quoted words come after the section's heading
        for piece in (p for p in ELLIPSIS.split(normalise(quote)) if p):
            if piece not in seed.text:
                piece = piece.replace("`", "")  # backticks as markup, when the seed has none
            found = seed.text.find(piece, position)
            if found < 0:
                if piece not in seed.text:
                    missing = f"is not in seed {citation.seed}"
                elif seed.text.find(piece) < heading_at:
                    missing = "comes before the section's heading"
                else:
                    missing = f"is out of order in seed {citation.seed}"
                problems.append(f"{where}: the quoted words \"{piece}\" {missing}")
                break
            position = found + len(piece)
    return problems


def spec_paragraphs() -> list[Paragraph]:
    return [p for path in sorted(SPEC.glob("*.md")) for p in paragraphs(path)]


def all_citations() -> tuple[list[Citation], list[str]]:
    citations, problems = [], []
    for paragraph in spec_paragraphs():
        found, wrong = parse(paragraph)
        citations += found
        problems += wrong
    return citations, problems


SEED_CACHE = {n: load_seed(n) for n in ("000", "001", "002", "003", "004")}


def seed(number: str) -> Seed | None:
    if number not in SEED_CACHE:
        SEED_CACHE[number] = load_seed(number)
    return SEED_CACHE[number]


def test_the_seeds_are_beside_the_repository():
    assert SEED_CACHE["000"] is not None, f"seed 000 not found in {SEEDS}"
    assert "The Quorum-based Kafka Controller" in SEED_CACHE["000"].text or "Broker Leases" in SEED_CACHE["000"].headings


def test_every_citation_of_a_seed_quotes_it_and_names_a_section_it_has():
    citations, _ = all_citations()
    problems = [problem for c in citations for problem in check(c, seed(c.seed))]
    assert not problems, "\n".join(problems)
    assert len(citations) > 150 and sum(len(c.quotes) for c in citations) > 80


def test_source_lines_and_decision_seeds_quote_only_through_citations():
    _, problems = all_citations()
    assert not problems, "\n".join(problems)


def test_every_rule_source_cites_in_the_citation_form():
    """A Source line that names a seed names the section too, so the check above reaches it."""
    sources = [p for p in spec_paragraphs() if p.text.startswith("Source:") and SEED_REF.search(p.text)]
    assert len(sources) > 80
    for paragraph in sources:
        citations, _ = parse(paragraph)
        assert citations, paragraph


# ---- the checker itself can fail -----------------------------------------------------------------

def cite_problems(text: str) -> list[str]:
    paragraph = Paragraph("example.md:1", normalise(text), text.startswith(("Source:", "*Seeds.*")))
    citations, problems = parse(paragraph)
    return problems + [p for c in citations for p in check(c, seed(c.seed))]


def test_the_checker_accepts_a_true_citation():
    assert cite_problems('Source: seed 000, "Broker Leases" ("Once the period has elapsed ... it will be fenced").') == []


@pytest.mark.parametrize(
    "text, complaint",
    [
        ('Source: seed 000, "Broker Leases" ("Once the lease has elapsed").', "is not in seed 000"),
        ('Source: seed 000, "Broker Leases" ("it will be fenced ... Once the period has elapsed").', "out of order"),
        ('Source: seed 000, "Controlled Shutdown" ("Once the period has elapsed").', "before the section's heading"),
        ('Source: seed 000, "Leases of Brokers" ("Once the period has elapsed").', "no section heading"),
        ('Source: seed 009, "Broker Leases".', "no seed 009"),
        ('Source: seed 000 ("Once the period has elapsed").', "names no section"),
        ('Source: seed 000, "Broker Leases"; the lease "lapses at its deadline".', "not a heading or a quotation"),
        ('*Seeds.* Seed 000: "the period has elapsed". *Kafka.* x', "not a heading or a quotation"),
    ],
    ids=["words", "order", "earlier-section", "section", "seed", "no-section", "paraphrase", "decision"],
)
def test_the_checker_refuses_a_wrong_citation(text, complaint):
    problems = cite_problems(text)
    assert any(complaint in p for p in problems), problems
