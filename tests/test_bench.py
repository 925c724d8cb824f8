"""``kraftspec bench impl --quick`` runs end to end and writes its figures (a smoke test: the
figures themselves are measured by the command, never asserted in tests)."""

import io
import json
from contextlib import redirect_stdout

from kraftspec.cli import main


def test_bench_impl_quick_runs_and_writes_every_figure(tmp_path):
    out = io.StringIO()
    with redirect_stdout(out):
        assert main(["bench", "impl", "--quick", "--json", str(tmp_path / "figures.json")]) == 0
    figures = json.loads((tmp_path / "figures.json").read_text())
    for key in ("heartbeats_small_v1", "heartbeats_big_v1", "fence_ms", "controlled_shutdown_ms",
                "snapshot_load_s", "bytes_per_partition", "model_heartbeats_small", "impl_model_ratio"):
        assert key in figures, key
    text = out.getvalue()
    assert "goal" in text and "impl/model" in text


def test_bench_conformance_quick_runs_and_writes_every_figure(tmp_path):
    out = io.StringIO()
    with redirect_stdout(out):
        assert main(["bench", "conformance", "--quick", "--json", str(tmp_path / "figures.json")]) == 0
    figures = json.loads((tmp_path / "figures.json").read_text())
    for key in ("generate_events_per_s", "replay_responses_events_per_s", "replay_state_events_per_s",
                "replay_records_events_per_s", "subprocess_responses_events_per_s", "subprocess_records_events_per_s"):
        assert figures[key] > 0, key
    assert "goal" in out.getvalue()
