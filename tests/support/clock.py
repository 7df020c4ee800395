"""The moment the `clock` fixture (tests/conftest.py) stops time at."""

import datetime

T0 = datetime.datetime(2030, 3, 1, 12, 0, tzinfo=datetime.UTC)
