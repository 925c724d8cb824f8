"""The state diagrams of spec/README.md (MEM-1, MEM-2, MEM-3 to MEM-5) are derived from the model:
the committed SVG files are what regenerating gives, byte for byte; every rule an arrow names is a
rule of the spec; and the moves MEM-2 and MEM-5 describe are found, with their rules."""

import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from kraftspec.conformance import diagrams
from kraftspec.spec import rules

ROOT = Path(__file__).resolve().parent.parent
SVG = "{http://www.w3.org/2000/svg}"


@pytest.fixture(scope="module")
def generated():
    return diagrams.diagrams()


@pytest.fixture(scope="module")
def files(generated):
    return {f"{d.name}.svg": diagrams.svg(d) for d in generated}


def arrows(diagram) -> dict[tuple[str, str, str], tuple[str, ...]]:
    return {(t.source, t.target, t.trigger): t.rules for t in diagram.transitions}


def test_mem_2_and_mem_5_diagrams_in_spec_diagrams_are_what_the_model_generates(tmp_path, files):
    """A change of the model that changes a diagram fails here until the files are regenerated."""
    written = diagrams.write(tmp_path, files)
    committed = sorted((ROOT / "spec" / "diagrams").glob("*.svg"))
    assert sorted(p.name for p in written) == [p.name for p in committed]
    for path in written:
        current = ROOT / "spec" / "diagrams" / path.name
        assert current.read_bytes() == path.read_bytes(), f"spec/diagrams/{path.name} is stale; run: {diagrams.COMMAND}"


def test_every_rule_an_arrow_names_is_a_rule_of_the_spec(generated, files):
    defined = set(rules())
    for diagram in generated:
        for t in diagram.transitions:
            assert t.rules, f"{diagram.name}: {t.source} -> {t.target} by {t.trigger} has no rule"
            assert set(t.rules) <= defined, t
    for text in files.values():  # and so does what the drawings say, in their text and titles
        root = ET.fromstring(text.split("\n", 1)[1])
        said = " ".join(e.text or "" for e in root.iter() if e.tag in (f"{SVG}text", f"{SVG}title", f"{SVG}desc"))
        named = set(re.findall(r"\b[A-Z]{2,10}-\d{1,3}\b", said))
        assert named and named <= defined, named - defined


def test_mem_2_membership_moves_are_found_with_their_rules(generated):
    membership = arrows(generated[0])
    fenced, active, shutdown = "registered+fenced", "registered+active", "in controlled shutdown"
    assert "REG-6" in membership[("unregistered", fenced, "register")]
    assert "REG-6" in membership[(fenced, fenced, "register (new incarnation)")]
    assert membership[(fenced, active, "heartbeat")] == ("LEASE-10",)
    assert membership[(active, fenced, "tick")] == ("LEASE-8",)
    assert membership[(active, fenced, "heartbeat WantFence")] == ("LEASE-12",)
    assert {"SHUT-1", "SHUT-3"} <= set(membership[(active, fenced, "heartbeat WantShutDown")])
    assert {"SHUT-1", "SHUT-2"} <= set(membership[(active, shutdown, "heartbeat WantShutDown")])
    assert "LEASE-14" in membership[(shutdown, active, "failover")]
    for source in (fenced, active, shutdown):
        assert membership[(source, "unregistered", "unregister")] == ("UNREG-2",)
    # nothing leaves unregistered but a registration, and nothing enters controlled shutdown but WantShutDown
    assert {t for s, _, t in membership if s == "unregistered"} == {"register"}
    assert {t for _, target, t in membership if target == shutdown} == {"heartbeat WantShutDown"}


def test_mem_5_broker_moves_are_found_with_their_rules(generated):
    broker = arrows(generated[1])
    assert broker[("NOT_RUNNING", "STARTING", "start")] == ("MEM-5",)
    assert "LEASE-9" in broker[("STARTING", "RECOVERY", "heartbeat")]
    assert set(broker[("RECOVERY", "RUNNING", "heartbeat")]) == {"LEASE-10", "MEM-5"}
    assert "SHUT-6" in broker[("PENDING_CONTROLLED_SHUTDOWN", "SHUTTING_DOWN", "heartbeat")]
    assert broker[("SHUTTING_DOWN", "NOT_RUNNING", "exit")] == ("MEM-5",)
    for source in ("STARTING", "RECOVERY", "RUNNING"):
        assert broker[(source, "PENDING_CONTROLLED_SHUTDOWN", "SIGTERM")] == ("MEM-5",)
    for source in ("STARTING", "RECOVERY", "RUNNING", "PENDING_CONTROLLED_SHUTDOWN", "SHUTTING_DOWN"):
        assert ("MEM-5",) == broker[(source, "NOT_RUNNING", "crash")]


def test_the_drawings_are_svg_with_titles_for_every_state_and_arrow(generated, files):
    for diagram in generated:
        root = ET.fromstring(files[f"{diagram.name}.svg"].split("\n", 1)[1])
        assert root.tag == f"{SVG}svg" and root.get("role") == "img"
        assert root.find(f"{SVG}title").text == diagram.title and root.find(f"{SVG}desc") is not None
        groups = root.findall(f"{SVG}g")
        states = [g for g in groups if g.get("class") == "state"]
        drawn = [g for g in groups if g.get("class") == "arrow"]
        assert [g.find(f"{SVG}title").text for g in states] == [f"state {caption}" for _, caption in diagram.states]
        assert len(drawn) == len({(t.source, t.target) for t in diagram.transitions})
        assert all(g.find(f"{SVG}title").text for g in drawn)
        texts = " ".join(t.text or "" for t in root.iter(f"{SVG}text"))
        assert all(caption in texts for _, caption in diagram.states)


def test_spec_readme_shows_both_diagrams_and_the_command():
    readme = (ROOT / "spec" / "README.md").read_text(encoding="utf-8")
    assert "](diagrams/membership.svg)" in readme and "](diagrams/broker.svg)" in readme
    assert diagrams.COMMAND in readme


def test_check_names_the_command_when_a_file_is_stale(tmp_path, files):
    for name, text in files.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    assert diagrams.stale(tmp_path, files) == []
    (tmp_path / "broker.svg").write_text("<svg/>", encoding="utf-8")
    assert diagrams.stale(tmp_path, files) == ["broker.svg"]
