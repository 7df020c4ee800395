"""The fault-injection suite runs the Procfile's own commands (bench/faults.py `procfile`)."""

from pathlib import Path

from bench.faults import procfile


def test_the_suite_runs_each_procfile_command_itself_without_the_supervisor(tmp_path: Path):
    commands = procfile(web_port=8123, work=tmp_path)
    assert set(commands) == {"web", "worker", "beat", "webhooks", "webhooks-test"}
    assert commands["web"][0] == ".venv/bin/granian"
    assert {"--port", "8123", "--respawn-failed-workers"} <= set(commands["web"])
    for name in ("worker", "beat", "webhooks", "webhooks-test"):
        assert commands[name][:3] == [".venv/bin/celery", "-A", "config"], commands[name]
    assert str(tmp_path / "celerybeat-schedule") in commands["beat"]
    assert not any("supervise.py" in arg for argv in commands.values() for arg in argv)
