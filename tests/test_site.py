"""``kraftspec site``: the specification as a static web site, built with MkDocs in strict mode.

The site is built once into a temporary folder (its time is checked), then read as plain files:
every rule and decision has its anchor, a rule's page shows what the sources say about it, the
search index holds rule ids as words, and a broken link or an unknown id fails the build with a
message that names it.
"""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
from importlib.resources import files
from pathlib import Path

import pytest

from kraftspec.cli import main
from kraftspec.site import SEARCH_SEPARATOR, html_name, page_name, spec_headings

ROOT = Path(__file__).resolve().parent.parent
SPEC = Path(str(files("kraftspec.spec")))


def _text(fragment: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", "", fragment))


def section(site: Path, rule_id: str) -> str:
    """The HTML of a rule's section: from its heading to the next heading of its page."""
    heading = spec_headings(SPEC)[rule_id]
    page = (site / html_name(heading.page)).read_text(encoding="utf-8")
    start = page.index(f'id="{rule_id.lower()}"')
    following = re.search(r"<h[1-3] id=", page[start + 1:])
    return page[start: start + 1 + following.start()] if following else page[start:]


def _git_status() -> str:
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        return ""
    return subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"], cwd=ROOT, capture_output=True,
                          text=True).stdout


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("site") / "out"
    before = _git_status()
    assert main(["site", str(out)]) == 0
    assert _git_status() == before, "the build wrote into the repository"
    return out


def test_the_site_is_a_plain_static_folder(site):
    assert (site / "index.html").is_file() and (site / "leases.html").is_file()
    assert (site / "search" / "search_index.json").is_file()
    for page in ("decisions.html", "profiles.html", "kafka.html", "version-matrix.html"):
        assert (site / page).is_file(), page
    assert "Figures" in (site / "version-matrix.html").read_text(encoding="utf-8") or \
        "4.4.0" in (site / "version-matrix.html").read_text(encoding="utf-8")


def test_every_rule_and_decision_id_has_its_anchor(site):
    from kraftspec.spec import rules

    assert len(rules()) > 100 and any(r.startswith("DEC-") for r in rules())
    pages: dict[str, str] = {}
    for rule in rules().values():
        name = html_name(page_name(rule.file))
        text = pages.setdefault(name, (site / name).read_text(encoding="utf-8"))
        assert f'id="{rule.id.lower()}"' in text, f"{rule.id} has no anchor in {name}"


def test_every_link_to_a_rule_reaches_its_anchor(site):
    anchors = {p.name: set(re.findall(r'id="([^"]+)"', p.read_text(encoding="utf-8"))) for p in site.glob("*.html")}
    checked = 0
    for name, text in ((p.name, p.read_text(encoding="utf-8")) for p in site.glob("*.html")):
        for target, anchor in re.findall(r'href="([\w.-]*\.html)?#([a-z]+-\d+)"', text):
            assert anchor in anchors[target or name], f"{name} links to {target}#{anchor}, which is not there"
            checked += 1
    assert checked > 500


def test_a_rules_section_shows_its_seed_sentence_code_tests_traces_and_profiles(site):
    """LEASE-8 as the example."""
    from kraftspec.conformance.coverage import citation_sites

    lease_8 = section(site, "LEASE-8")
    words = _text(lease_8)
    # the rule's own text and Source line, as the spec writes them
    assert "A lapsed lease fences the broker" in words and 'Source: seed 000, "Broker Leases"' in words
    # the quoted seed sentence, linked on the public KIP page with a text fragment
    [kip] = re.findall(r'href="(https://cwiki\.apache\.org/[^"]+)"', lease_8)
    assert "KIP-631" in kip and "#:~:text=Broker%20leases" in kip and kip.endswith(",it%20will%20be%20fenced")
    # the model code that cites it, file and line
    heartbeat = (ROOT / "model" / "heartbeat.py").read_text(encoding="utf-8")
    lines = [line for rule, line in citation_sites(heartbeat) if rule == "LEASE-8"]
    assert lines and all(f"model/heartbeat.py:{line}" in words for line in lines)
    # the tests named after it
    assert "tests/test_leases.py::test_lease_8_" in words
    # the corpus traces that fire it, told step by step, collapsed, the firing step highlighted
    assert lease_8.count('<details class="example"') >= 1
    assert "the highlighted step fires LEASE-8" in words and 'class="hll"' in lease_8
    assert re.search(r"rules\s+.*LEASE-8", words)
    # its coverage, and how the profiles differ on it
    assert re.search(r"Coverage: fired in \d+ of \d+ traces", words)
    assert "lease_lapses" in words and "kip-631 at-deadline" in words and "kafka after-deadline" in words
    # the proofs about it, not run unless results are given
    assert "without the LEASE-8 guard" in words and "not run" in words


def test_decisions_list_their_rules(site):
    dec_7 = _text(section(site, "DEC-7"))
    assert "Rules it lists: LEASE-8, REG-4, INV-10" in dec_7
    assert 'href="leases.html#lease-8"' in section(site, "DEC-7")


def test_the_search_index_has_rule_ids_and_title_words_as_tokens(site):
    index = json.loads((site / "search" / "search_index.json").read_text(encoding="utf-8"))
    separator = index["config"]["separator"]
    assert separator == SEARCH_SEPARATOR

    def tokens(text: str) -> set[str]:
        return {t.lower() for t in re.split(separator, _text(text)) if t}

    [entry] = [d for d in index["docs"] if d["location"] == "leases.html#lease-8"]
    assert {"lease-8", "lapsed", "fences"} <= tokens(entry["title"])
    everything = set().union(*(tokens(d["title"] + " " + d["text"]) for d in index["docs"]))
    assert {"lease-8", "dec-7", "inv-10"} <= everything


def _spec_copy(tmp_path: Path, addition: str) -> Path:
    spec = tmp_path / "spec"
    shutil.copytree(SPEC, spec, ignore=shutil.ignore_patterns("__pycache__", "*.py"))
    with (spec / "leases.md").open("a", encoding="utf-8") as file:
        file.write(f"\n{addition}\n")
    return spec


def test_a_broken_link_fails_the_build_naming_it(tmp_path, capsys):
    spec = _spec_copy(tmp_path, "See [the moon](moon.md).")
    out = tmp_path / "out"
    assert main(["site", "--spec", str(spec), str(out)]) == 1
    err = capsys.readouterr().err
    assert "moon.md" in err and f"{spec / 'leases.md'}" in err and "Traceback" not in err
    assert not out.exists(), "a failed build leaves OUT_DIR alone"


def test_an_unknown_rule_id_fails_the_build_naming_the_page_and_id(tmp_path, capsys):
    spec = _spec_copy(tmp_path, "As LEASE-999 says.")
    assert main(["site", "--spec", str(spec), str(tmp_path / "out")]) == 1
    err = capsys.readouterr().err
    assert "LEASE-999" in err and "leases.md" in err and "line" in err and "Traceback" not in err


def test_proof_results_coverage_and_source_links_are_shown_when_given(tmp_path):
    proofs = tmp_path / "prove.json"
    proofs.write_text(json.dumps({
        "obligations": [{"group": "invariant", "subject": "INV-10", "transition": "Failover", "result": "proved",
                         "seconds": 0.1, "detail": "", "bound": "", "profile": "all"}],
        "guards": [{"guard": "LEASE-8", "transition": "Tick (done)", "breaks": "INV-10", "profile": "kip-631",
                    "description": "a lease lapses a millisecond later", "result": "failed", "caught": True}]}))
    summary = tmp_path / "summary.json"
    summary.write_text(json.dumps({"traces": 20000, "rules": {"LEASE-8": {"traces": 1234, "firings": 5678}}}))
    out = tmp_path / "out"
    assert main(["site", str(out), "--proofs", str(proofs), "--conform-summary", str(summary),
                 "--source-url", "https://example.org/kraftspec/blob/main"]) == 0
    lease_8 = section(out, "LEASE-8")
    words = _text(lease_8)
    assert "fails, as it must" in words and "not run" not in words
    assert "fired in 1,234 of 20,000 traces" in words
    assert re.search(r'href="https://example\.org/kraftspec/blob/main/model/heartbeat\.py#L\d+"', lease_8)
    assert "inductive: 1 obligations" in _text(section(out, "INV-10"))
    # a second build replaces the first
    assert main(["site", str(out)]) == 0
    assert "not run" in _text(section(out, "LEASE-8"))


@pytest.mark.parametrize("content, field", [("{", "not JSON"), ('{"obligations": [{"subject": 3}]}', "obligations[0].subject")])
def test_a_bad_proofs_file_is_refused_naming_it(tmp_path, capsys, content, field):
    proofs = tmp_path / "prove.json"
    proofs.write_text(content)
    assert main(["site", str(tmp_path / "out"), "--proofs", str(proofs)]) == 2
    err = capsys.readouterr().err
    assert str(proofs) in err and field in err and "Traceback" not in err


def test_a_folder_the_command_did_not_build_is_left_alone(tmp_path, capsys):
    out = tmp_path / "mine"
    out.mkdir()
    (out / "notes.txt").write_text("keep me")
    assert main(["site", str(out)]) == 2
    assert "not a site this command built" in capsys.readouterr().err
    assert (out / "notes.txt").read_text() == "keep me"


def test_the_conform_reports_rule_links_reach_their_anchors_on_the_site(site, tmp_path):
    from kraftspec.conform import report_html
    from kraftspec.conformance.coverage import runtime_rules

    data = {"spec_version": "1.0", "traces": 1, "passed": 1, "failed": 0, "events": 5, "seconds": 1.0,
            "events_per_second": 5,
            "workload": {"traces": 1, "first_seed": 0, "steps": 5, "adapter": "impl", "level": "records"},
            "per_level": {"responses": {"passed": 1, "failed": 0, "not_reached": 0}},
            "rules": {r: {"traces": 1, "firings": 1} for r in runtime_rules()}, "never_reached": [],
            "failures": [], "divergences": []}
    page = report_html(data, tmp_path, site_url=str(site))
    links = re.findall(r'<a href="([^"#]+)#([a-z]+-\d+)"', page)
    assert len(links) == len(runtime_rules())
    for target, anchor in links:
        assert f'id="{anchor}"' in Path(target).read_text(encoding="utf-8"), f"{target}#{anchor}"
