"""The behaviour profiles (spec/profiles.toml, read by kraftspec.spec.profiles): the data is whole and
consistent, the configurations of model and impl carry it, and spec/profiles.md is generated from it."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import attrs
import pytest

from kraftspec.impl.config import ConfigError as ImplConfigError
from kraftspec.impl.config import ControllerConfig
from kraftspec.model import Config, ConfigError
from kraftspec.spec import rules
from kraftspec.spec.profiles import DEFAULT_PROFILE, Profile, ProfileError, parameters, profile, profile_names
from kraftspec.spec.profiles_doc import COMMAND, markdown

ROOT = Path(__file__).resolve().parent.parent
SPEC = ROOT / "spec"
NOT_PARAMETERS = {"name", "title", "about"}


def raw_table() -> dict:
    return tomllib.loads((SPEC / "profiles.toml").read_text(encoding="utf-8"))


# ---- the data ------------------------------------------------------------------------------------

def test_there_are_two_profiles_and_kip_631_is_the_default():
    assert profile_names() == ("kip-631", "kafka")
    assert DEFAULT_PROFILE == "kip-631"
    assert profile().name == "kip-631"


def test_every_profile_defines_every_parameter():
    names = set(raw_table()["profile"])
    for entry in raw_table()["parameter"]:
        assert names <= set(entry), f"{entry['name']} has no value for {sorted(names - set(entry))}"
    for name in profile_names():
        loaded = profile(name)
        for p in parameters():
            assert getattr(loaded, p.name) == p.values[name]


def test_every_value_is_among_its_parameters_choices():
    assert len(parameters()) >= 9
    for p in parameters():
        assert len(p.choices) == len(set(p.choices)) >= 2, p.name
        for name in profile_names():
            assert p.values[name] in p.choices, f"{p.name} = {p.values[name]!r} in {name} is not one of {p.choices}"


def test_the_profiles_differ_on_every_parameter():
    """A parameter names a point where the profiles differ: one on which they agree is not one."""
    for p in parameters():
        assert len({p.values[name] for name in profile_names()}) == len(profile_names()), p.name


def test_parameter_names_are_unique_and_every_entry_says_why():
    names = [p.name for p in parameters()]
    assert len(names) == len(set(names))
    for p in parameters():
        assert p.question.endswith("?") and p.why and p.rules, p.name


def test_the_profile_class_has_one_field_per_parameter():
    fields = {f.name for f in attrs.fields(Profile)} - NOT_PARAMETERS
    assert fields == {p.name for p in parameters()}


def test_every_decision_a_parameter_names_is_in_decisions_md():
    decisions = set(re.findall(r"^### (DEC-\d+)\s", (SPEC / "decisions.md").read_text(encoding="utf-8"), flags=re.M))
    assert len(decisions) > 30
    missing = {p.name: p.decision for p in parameters() if p.decision not in decisions}
    assert not missing, f"decisions not in spec/decisions.md: {missing}"


def test_every_rule_a_parameter_names_is_a_rule_of_the_spec():
    known = rules()
    missing = {p.name: [r for r in p.rules if r not in known] for p in parameters()}
    assert not {k: v for k, v in missing.items() if v}, missing
    assert not any(r.startswith("DEC-") for p in parameters() for r in p.rules), "rules name rules, not decisions"


def test_an_unknown_profile_is_refused_naming_the_known_ones():
    with pytest.raises(ProfileError) as refused:
        profile("nope")
    message = str(refused.value)
    assert "'nope'" in message
    for name in profile_names():
        assert name in message


# ---- the configurations of model and impl ---------------------------------------------------------

def test_model_config_refuses_an_unknown_profile():
    with pytest.raises(ConfigError, match="nope"):
        Config(profile="nope")
    with pytest.raises(ConfigError, match="kip-631"):
        Config.for_profile("nope")


def test_model_config_for_profile_gives_the_profiles_default_timings():
    """DEC-12, LEASE-1, CONF-1: 2000 and 9000 in the kafka profile, 3000 and 18000 in kip-631."""
    kafka = Config.for_profile("kafka")
    assert (kafka.heartbeat_interval_ms, kafka.session_timeout_ms) == (2000, 9000)
    assert kafka.profile == "kafka" and kafka.params == profile("kafka")
    kip = Config.for_profile("kip-631")
    assert (kip.heartbeat_interval_ms, kip.session_timeout_ms) == (3000, 18000)
    assert kip.params.lease_lapses == "at-deadline" and kafka.params.lease_lapses == "after-deadline"


def test_model_config_for_profile_keeps_timings_it_is_given():
    config = Config.for_profile("kafka", session_timeout_ms=4000)
    assert (config.heartbeat_interval_ms, config.session_timeout_ms) == (2000, 4000)
    with pytest.raises(ConfigError):
        Config.for_profile("kafka", session_timeout_ms=1000)  # CONF-2: not longer than the interval


def test_impl_controller_config_carries_the_profile():
    assert ControllerConfig(profile="kafka").params is profile("kafka")
    assert ControllerConfig().params is profile("kip-631")
    with pytest.raises(ImplConfigError, match="nope"):
        ControllerConfig(profile="nope")


# ---- spec/profiles.md ------------------------------------------------------------------------------

def test_profiles_md_is_the_text_generated_from_profiles_toml():
    written = (SPEC / "profiles.md").read_text(encoding="utf-8")
    assert written == markdown(), f"spec/profiles.md is stale: regenerate it with `{COMMAND}`"


def test_profiles_md_has_a_row_for_every_rule_of_every_parameter():
    text = markdown()
    by_rule = text.split("## By rule", 1)[1].split("## By parameter", 1)[0]
    rows = [line for line in by_rule.splitlines() if line.startswith("| ") and "`" in line]
    assert len(rows) == sum(len(p.rules) for p in parameters())
    for p in parameters():
        assert f"### `{p.name}`" in text
        for rule_id in p.rules:
            assert f"[{rule_id}](" in by_rule


def test_the_profile_documents_define_no_rules():
    """profiles.md and kafka.md name rules and decisions but give none a ``### ID`` heading of its own."""
    assert not [r.id for r in rules().values() if r.file in ("profiles.md", "kafka.md")]
