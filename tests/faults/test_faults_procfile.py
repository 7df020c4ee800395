"""The fault-injection suite runs the Procfile's own commands (bench/faults.py `procfile`)."""

from pathlib import Path

from bench.faults import procfile, procfile_env


def test_the_suite_runs_each_procfile_command_itself_without_the_supervisor(tmp_path: Path):
    commands = procfile()
    assert set(commands) == {"web", "admin", "worker", "beat", "webhooks", "webhooks-test"}
    for name, argv in commands.items():
        assert argv == [".venv/bin/python", "scripts/serve.py", name]
    env = procfile_env(web_port=8123, work=tmp_path)
    admin_port = env.pop("ADMIN_PORT")
    assert admin_port.isdigit() and admin_port != "8123"
    assert env == {"WEB_PORT": "8123", "BEAT_SCHEDULE": str(tmp_path / "celerybeat-schedule")}
