"""Every rule in spec/ is cited in model/ and checked by a test that names it; every
citation in the model names a rule that exists. (The house rule, as a test.)"""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
ID = re.compile(r"\b([A-Z]{2,10})-(\d{1,3})\b")
NOT_IDS = {"KIP", "KAFKA", "UTF", "SHA", "RFC", "ISO", "JIRA", "HTTP", "PEP", "CVE"}


def spec_text() -> str:
    return "\n".join(p.read_text() for p in sorted((ROOT / "spec").glob("*.md")))


def defined_ids() -> list[str]:
    """The ids with a heading of their own (``### LEASE-8 ...``), outside code blocks."""
    text = re.sub(r"```.*?```", "", spec_text(), flags=re.S)
    return re.findall(r"^### ([A-Z]{2,10}-\d{1,3})\b", text, flags=re.M)


def mentioned_ids(text: str) -> set[str]:
    return {f"{a}-{n}" for a, n in ID.findall(text) if a not in NOT_IDS}


def python_text(folder: str) -> str:
    return "\n".join(p.read_text() for p in sorted((ROOT / folder).rglob("*.py")))


def test_every_id_is_defined_once():
    ids = defined_ids()
    assert len(ids) == len(set(ids)), sorted(i for i in ids if ids.count(i) > 1)
    assert len(ids) > 100


def test_every_id_the_spec_mentions_is_defined():
    assert mentioned_ids(spec_text()) - set(defined_ids()) == set()


def test_every_rule_cites_its_source():
    text = re.sub(r"```.*?```", "", spec_text(), flags=re.S)
    sections = re.split(r"^### ", text, flags=re.M)[1:]
    for section in sections:
        rule = section.split()[0]
        if not ID.fullmatch(rule):
            continue  # a heading of prose (spec/traces.md), not a rule
        if rule.startswith("DEC-"):
            assert "*Seeds.*" in section and "*Rules.*" in section, rule
            assert re.search(r"\*(Choice|Choices|Options and choices)\.\*", section), rule
        else:
            assert "Source:" in section, rule


@pytest.mark.parametrize("folder", ["model", "tests"])
def test_every_id_is_cited_in_model_and_tests(folder):
    missing = set(defined_ids()) - mentioned_ids(python_text(folder))
    assert not missing, f"not cited in {folder}/: {sorted(missing)}"


def test_every_rule_has_a_test_named_after_it():
    """Decisions are checked through the tests of their rules, which name them in docstrings."""
    names = "\n".join(re.findall(r"^def (test_\w+)", python_text("tests"), flags=re.M))
    missing = []
    for rule in defined_ids():
        if rule.startswith("DEC-"):
            continue
        snake = rule.lower().replace("-", "_")
        if not re.search(rf"(?<![a-z0-9]){snake}(?![0-9])", names):
            missing.append(rule)
    assert not missing, f"no test named after: {missing}"


def test_every_citation_in_the_model_names_a_rule():
    cited = set(re.findall(r'(?:cite|reject)\("([^"]+)"\)', python_text("model")))
    assert cited - set(defined_ids()) == set()
    assert mentioned_ids(python_text("model")) - set(defined_ids()) == set()
