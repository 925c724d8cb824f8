"""The controller's configuration (CONF-1, CONF-2): timings, cluster id, finalized features."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from kraftspec.spec.profiles import DEFAULT_PROFILE, Profile, profile_names
from kraftspec.spec.profiles import profile as profile_named

from .formats import FORMATS

DEFAULT_CLUSTER_ID = "BzQ3d36UVz-6ojsUlsLasQ"
_FEATURE_NAME = re.compile(r"^[a-z0-9][a-z0-9._-]*$")


class ConfigError(ValueError):
    """A setting that cannot work; the message names the setting and its value."""


@dataclass(frozen=True)
class ControllerConfig:
    cluster_id: str = DEFAULT_CLUSTER_ID
    heartbeat_interval_ms: int = 3000
    session_timeout_ms: int = 18000
    finalized_features: tuple[tuple[str, int, int], ...] = field(default=(("metadata.format", 1, 1),))
    profile: str = DEFAULT_PROFILE  # spec/profiles.toml: the behaviour this controller follows
    node_id: int = 0  # CONF-1: node.id, which a metadata directory's meta.properties must name (TOOL-1)
    params: Profile = field(init=False, compare=False, repr=False)

    @classmethod
    def for_profile(cls, profile: str = DEFAULT_PROFILE, **settings: Any) -> "ControllerConfig":
        """A configuration of ``profile`` with its default timings (DEC-12) and finalized features
        (DEC-23) unless ``settings`` name them."""
        if profile not in profile_names():
            raise ConfigError(f"unknown profile {profile!r}; the profiles are {', '.join(profile_names())}")
        params = profile_named(profile)
        interval, timeout = params.default_timings
        settings.setdefault("heartbeat_interval_ms", interval)
        settings.setdefault("session_timeout_ms", timeout)
        settings.setdefault("finalized_features", tuple(tuple(f) for f in params.default_features))
        return cls(profile=profile, **settings)

    def __post_init__(self) -> None:
        if self.profile not in profile_names():
            raise ConfigError(f"unknown profile {self.profile!r}; the profiles are {', '.join(profile_names())}")
        object.__setattr__(self, "params", profile_named(self.profile))
        for setting, value in (
            ("broker.heartbeat.interval.ms", self.heartbeat_interval_ms),
            ("broker.session.timeout.ms", self.session_timeout_ms),
        ):
            if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
                raise ConfigError(f"{setting} must be a positive integer, got {value!r}")
        if self.session_timeout_ms <= self.heartbeat_interval_ms:
            raise ConfigError(
                f"broker.session.timeout.ms ({self.session_timeout_ms}) must be longer than "
                f"broker.heartbeat.interval.ms ({self.heartbeat_interval_ms})"
            )
        if not self.cluster_id:
            raise ConfigError("cluster.id must not be empty")
        if not isinstance(self.node_id, int) or isinstance(self.node_id, bool) or not 0 <= self.node_id <= 2**31 - 1:
            raise ConfigError(f"node.id must be an integer from 0 to {2**31 - 1}, got {self.node_id!r}")
        names = [name for name, _, _ in self.finalized_features]
        if len(set(names)) != len(names):
            raise ConfigError(f"finalized features name a feature twice: {names}")
        for name, low, high in self.finalized_features:
            if not _FEATURE_NAME.match(name) or not 0 <= low <= high:
                raise ConfigError(f"finalized feature {name!r} [{low}, {high}] is not a valid feature range")
            if low != high and not FORMATS[self.params.record_formats].finalizes_a_range:  # DEC-22: one level per record
                raise ConfigError(
                    f"finalized feature {name} has levels [{low}, {high}]; "
                    f"the {self.profile} profile finalizes one level per feature (min = max)"
                )
