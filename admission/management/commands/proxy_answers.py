"""`manage.py proxy_answers [--write]`: the proxy's answers written from the service's errors
(admission/proxy.py). Without --write, exits 1 when deploy/haproxy.cfg differs."""

from django.core.management.base import BaseCommand, CommandError

from admission import proxy


class Command(BaseCommand):
    help = "Write (or check) the error bodies of deploy/haproxy.cfg from the service's errors."

    def add_arguments(self, parser):
        parser.add_argument("--write", action="store_true", help="rewrite the file in place")

    def handle(self, *args, write: bool, **options):
        config = proxy.CONFIG.read_text()
        if proxy.missing(config):
            raise CommandError(f"{proxy.CONFIG} gives none of {sorted(proxy.missing(config))}")
        expected = proxy.written(config)
        if write:
            proxy.CONFIG.write_text(expected)
            self.stdout.write(f"{proxy.CONFIG}: the proxy's answers written")
        elif expected != config:
            raise CommandError(f"{proxy.CONFIG} differs: run `manage.py proxy_answers --write`")
        else:
            self.stdout.write(f"{proxy.CONFIG}: the proxy's answers are the service's")
