"""Test settings: Hypothesis profiles, and a clear message when kraftspec is not installed.

Profiles (choose with HYPOTHESIS_PROFILE): ``ci`` (default) runs 200 examples, derandomized
so CI runs are repeatable; ``thorough`` runs 5,000 with fresh randomness.
"""

import os

from hypothesis import HealthCheck, settings

try:
    import kraftspec.model  # noqa: F401
except ImportError as missing:  # pragma: no cover - only on a checkout that skipped the install
    raise SystemExit("kraftspec is not installed: run  pip install -e '.[test]'  from the repository root") from missing

settings.register_profile(
    "ci", max_examples=200, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile("thorough", max_examples=5000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
