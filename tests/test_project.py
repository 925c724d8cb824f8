"""The project's own promises: the README's quickstart is two commands, and CI runs the second."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def quickstart_commands() -> list[str]:
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## Quickstart", 1)[1].split("\n## ", 1)[0]
    [block] = re.findall(r"```\n(.*?)```", section, flags=re.S)
    return [line for line in block.splitlines() if line.strip()]


def test_the_quickstart_is_two_commands_install_and_run_then_install_and_test():
    conform, tests = quickstart_commands()
    assert "pip install" in conform and conform.endswith("kraftspec conform")
    assert "pip install" in tests and "'.[test]'" in tests and tests.endswith("pytest")


def test_the_readmes_model_example_runs():
    readme = (ROOT / "README.md").read_text()
    [example] = re.findall(r"```python\n(.*?)```", readme, flags=re.S)
    namespace: dict = {}
    exec(compile(example, "README.md", "exec"), namespace)
    assert namespace["result"].replies[0].response.error_code == 0


def test_ci_runs_the_readmes_test_command_word_for_word():
    script = (ROOT / ".ci" / "run").read_text()
    assert quickstart_commands()[1] in script.splitlines()
    assert "Java 17" in script


def test_ci_refuses_clearly_without_java(tmp_path):
    import os
    import subprocess

    bin_dir = tmp_path / "bin"  # a PATH with what the script needs before its Java check, but no java
    bin_dir.mkdir()
    for tool in ("dirname", "bash"):
        os.symlink(subprocess.run(["which", tool], capture_output=True, text=True, check=True).stdout.strip(), bin_dir / tool)
    result = subprocess.run(
        [str(bin_dir / "bash"), str(ROOT / ".ci" / "run")], capture_output=True, text=True, env={"PATH": str(bin_dir)}
    )
    assert result.returncode == 1 and "Java was not found" in result.stderr and "Java 17" in result.stderr
