"""The everyday checks run clean: ruff (pyflakes, bugbear, syntax errors) over the whole tree, and
mypy over the model and impl, and over the whole package as it is installed, each with its
configuration in pyproject.toml.

Both run from the interpreter running the tests (the `test` extra installs them), in the
repository root so that they read pyproject.toml, with their caches in a temporary folder."""

import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def run(tool: str, *args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", tool, *args], cwd=cwd, capture_output=True, text=True, timeout=900)


def installed_layout(into: Path) -> Path:
    """A tree of links laid out as pyproject.toml's package-dir installs the package (kraftspec/
    holds cli/'s modules, kraftspec/model is model/, ...), which mypy can follow where the source
    tree, whose top package is spread over several folders, cannot be."""
    package_dirs = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-dir"]
    top = into / "kraftspec"
    top.mkdir(parents=True)
    for source in ROOT.joinpath(package_dirs["kraftspec"]).glob("*.py"):
        (top / source.name).symlink_to(source)
    for package, folder in package_dirs.items():
        parent, _, name = package.rpartition(".")
        if parent and package_dirs.get(parent, "") + "/" + name != folder:  # not already inside its parent's folder
            top.joinpath(*package.split(".")[1:]).symlink_to(ROOT / folder, target_is_directory=True)
    return into


def test_installed_layout_has_every_package_where_it_is_imported_from(tmp_path):
    import kraftspec
    import kraftspec.conformance.examples
    import kraftspec.spec.schemas

    tree = installed_layout(tmp_path) / "kraftspec"
    for package in (kraftspec, kraftspec.conformance.examples, kraftspec.spec.schemas):
        where = tree.joinpath(*package.__name__.split(".")[1:], "__init__.py")
        assert where.resolve() == Path(package.__file__).resolve()


def test_ruff_finds_nothing(tmp_path):
    result = run("ruff", "check", "--cache-dir", str(tmp_path / "ruff"), "--output-format", "concise", ".")
    assert result.returncode == 0, f"ruff check found problems:\n{result.stdout}{result.stderr}"


def test_mypy_finds_nothing_in_the_model_and_impl(tmp_path):
    result = run("mypy", "--cache-dir", str(tmp_path / "mypy"))
    assert result.returncode == 0, f"mypy found problems:\n{result.stdout}{result.stderr}"
    assert "Success" in result.stdout, result.stdout  # it checked files (the ones pyproject.toml names)


def test_mypy_finds_nothing_in_the_whole_package_as_installed(tmp_path):
    """The command line, the conformance tools and the proofs too, with pyproject.toml's settings."""
    tree = installed_layout(tmp_path / "tree")
    result = run("mypy", "--config-file", str(ROOT / "pyproject.toml"), "--cache-dir", str(tmp_path / "mypy"),
                 "-p", "kraftspec", cwd=tree)
    assert result.returncode == 0, f"mypy found problems:\n{result.stdout}{result.stderr}"
    assert "Success" in result.stdout and "source files" in result.stdout, result.stdout
