"""The everyday checks run clean: ruff (pyflakes, bugbear, syntax errors) over the whole tree, and
mypy over the model and impl, each with its configuration in pyproject.toml.

Both run from the interpreter running the tests (the `test` extra installs them), in the
repository root so that they read pyproject.toml, with their caches in a temporary folder."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def run(tool: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", tool, *args], cwd=ROOT, capture_output=True, text=True, timeout=600)


def test_ruff_finds_nothing(tmp_path):
    result = run("ruff", "check", "--cache-dir", str(tmp_path / "ruff"), "--output-format", "concise", ".")
    assert result.returncode == 0, f"ruff check found problems:\n{result.stdout}{result.stderr}"


def test_mypy_finds_nothing_in_the_model_and_impl(tmp_path):
    result = run("mypy", "--cache-dir", str(tmp_path / "mypy"))
    assert result.returncode == 0, f"mypy found problems:\n{result.stdout}{result.stderr}"
    assert "Success" in result.stdout, result.stdout  # it checked files (the ones pyproject.toml names)
