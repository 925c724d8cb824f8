"""The behaviour profiles of the specification, read from profiles.toml.

``profile("kafka").lease_lapses`` is the value one parameter takes in one profile. The model and
impl both read profiles through this module, so that a difference between the profiles is
written once, as data tied to its decision id (profiles.toml), and not as branches.
"""

from __future__ import annotations

import functools
import tomllib
from importlib.resources import files
from typing import Any

import attrs
from attrs import frozen

DEFAULT_PROFILE = "kip-631"


class ProfileError(ValueError):
    """A profile name the specification does not define; the message lists the known ones."""


@frozen
class Parameter:
    """One point on which the profiles differ (a ``[[parameter]]`` of profiles.toml)."""

    name: str
    decision: str
    rules: tuple[str, ...]
    question: str
    choices: tuple[Any, ...]
    values: dict[str, Any]  # profile name -> value
    why: str


@frozen
class Profile:
    """The value of every parameter in one profile. The fields are the parameters' names."""

    name: str
    title: str
    about: str
    lease_lapses: str  # DEC-7
    lease_expiry: str  # DEC-25
    registration_is_contact: bool  # DEC-6
    retry_registration: str  # DEC-5
    shutdown_grant: str  # DEC-14
    reassignment_layout: str  # DEC-18
    reassignment_completes: str  # DEC-18
    leader_epoch_on_replica_removal: bool  # DEC-17
    answered_at_once: tuple[str, ...]  # DEC-21: rule ids
    not_leader_error: str  # DEC-15
    leader_moved_error: str  # DEC-15: ISR-10
    unregister_unknown_error: str  # DEC-35
    heartbeat_offset: str  # DEC-2
    default_timings: tuple[int, int]  # DEC-12: (heartbeat interval, session timeout)
    record_formats: str  # DEC-22
    frame_type: int  # DEC-10
    rpc_formats: str  # DEC-9
    default_features: tuple[tuple[str, int, int], ...]  # DEC-23: (name, min level, max level)


_NOT_PARAMETERS = ("name", "title", "about")


def _freeze(value: Any) -> Any:
    return tuple(_freeze(v) for v in value) if isinstance(value, list) else value


@functools.cache
def _table() -> tuple[dict[str, dict[str, str]], tuple[Parameter, ...]]:
    data = tomllib.loads(files(__package__).joinpath("profiles.toml").read_text(encoding="utf-8"))
    names = tuple(data["profile"])
    parameters = tuple(
        Parameter(
            name=entry["name"],
            decision=entry["decision"],
            rules=tuple(entry["rules"]),
            question=entry["question"],
            choices=_freeze(entry["choices"]),
            values={name: _freeze(entry[name]) for name in names},
            why=" ".join(entry["why"].split()),
        )
        for entry in data["parameter"]
    )
    return data["profile"], parameters


def parameters() -> tuple[Parameter, ...]:
    """Every parameter, in the order of profiles.toml."""
    return _table()[1]


def profile_names() -> tuple[str, ...]:
    """The profiles the specification defines, the default first."""
    return tuple(_table()[0])


@functools.cache
def profile(name: str = DEFAULT_PROFILE) -> Profile:
    """The profile called ``name``; :class:`ProfileError` for a name the specification lacks."""
    described, table = _table()
    if name not in described:
        raise ProfileError(f"unknown profile {name!r}; the profiles are {', '.join(described)}")
    fields = {p.name: p.values[name] for p in table}
    expected = {f.name for f in attrs.fields(Profile)} - set(_NOT_PARAMETERS)
    if set(fields) != expected:  # profiles.toml and this class must name the same parameters
        raise ProfileError(f"profiles.toml parameters {sorted(fields)} differ from Profile's {sorted(expected)}")
    for p in table:
        if p.values[name] not in p.choices:
            raise ProfileError(f"profiles.toml: {p.name} = {p.values[name]!r} in {name} is not one of {p.choices}")
    return Profile(name=name, title=described[name]["title"], about=" ".join(described[name]["about"].split()), **fields)
