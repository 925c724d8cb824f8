"""``kraftspec prove``: its table, its JSON and JUnit reports, --only, --drift and --profile. (The
proofs, the drift check and the guard-removal check themselves: tests/test_proofs.py.)"""

import itertools
import json

import pytest

from kraftspec.cli import main
from kraftspec.proofs import drift, guards
from kraftspec.proofs.obligations import ALL_PROFILES
from kraftspec.spec.profiles import profile_names


@pytest.fixture
def corpus_head(monkeypatch):
    """The drift check over the first 30 steps of the corpus's traces only: these tests are about
    what the command runs, prints and writes; the whole corpus, in each profile, is checked against
    the encoding by tests/test_proofs.py (which takes minutes)."""
    whole = drift.corpus_samples
    monkeypatch.setattr(drift, "corpus_samples", lambda *args, **kwargs: itertools.islice(whole(*args, **kwargs), 30))


def test_kraftspec_prove_prints_the_table_and_writes_json_and_junit(tmp_path, capsys):
    report, xml = tmp_path / "prove.json", tmp_path / "prove.xml"
    assert main(["prove", "--json", str(report), "--junit", str(xml)]) == 0
    out = capsys.readouterr().out
    assert "INV-3" in out and "BrokerHeartbeat" in out and "TIME-1" in out
    removals = len(guards.cases())
    assert f"{removals} of {removals} guard removals make their obligation fail" in out and "all checks passed" in out
    data = json.loads(report.read_text())
    assert data["passed"] and {o["group"] for o in data["obligations"]} == {"invariant", "timing"}
    assert all(g["caught"] for g in data["guards"]) and data["dependencies"]["INV-9"]
    assert 'failures="0"' in xml.read_text()


def test_kraftspec_prove_refuses_an_unknown_invariant_id(capsys):
    assert main(["prove", "--only", "INV-99"]) == 2
    assert "INV-99 is not an invariant id" in capsys.readouterr().err


def test_kraftspec_prove_only_some_invariants_with_a_small_drift_check(capsys, corpus_head):
    assert main(["prove", "--only", "INV-3", "--drift", "20", "--no-guards"]) == 0
    out = capsys.readouterr().out
    assert "INV-3" in out and "INV-9 " not in out and "0 mismatches" in out


def test_kraftspec_prove_under_another_profile_samples_it_and_proves_every_profile(tmp_path, capsys, corpus_head):
    """The drift check's corpus traces, scripted run and walks are of the profile, and the encoding of
    that profile agrees with them; the invariant proofs cover every profile whatever --profile says."""
    samples = list(drift.samples(3, seed=1, profile="kafka"))
    assert {(s.config.profile, s.config.session_timeout_ms) for s, _, _ in samples} == {("kafka", 9000)}
    report = tmp_path / "prove.json"
    assert main(["prove", "--only", "INV-3", "--drift", "5", "--no-guards", "--profile", "kafka",
                 "--json", str(report)]) == 0
    out = capsys.readouterr().out
    assert "profile kafka: the drift check (--drift) samples the model under it" in out
    scripted = sum(1 for _ in drift.scripted_samples("kafka"))
    corpus = sum(1 for _ in drift.corpus_samples(profile="kafka"))
    assert (f"drift check: {corpus + scripted + 5} steps ({corpus} from the corpus, {scripted} scripted, 5 from "
            f"random walks, seed 0, profile kafka)") in out and "0 mismatches" in out
    data = json.loads(report.read_text())
    assert data["profile"] == "kafka"
    assert {o["profile"] for o in data["obligations"] if o["subject"] == "INV-3"} == {ALL_PROFILES, *profile_names()}
