"""The admin's dates and times (docs/back-office.md "Times"): to the second, with the zone
(always UTC here), since two webhook attempts a minute apart must not read the same."""

DATETIME_FORMAT = "Y-m-d H:i:s T"
SHORT_DATETIME_FORMAT = "Y-m-d H:i:s T"
DATE_FORMAT = "Y-m-d"
SHORT_DATE_FORMAT = "Y-m-d"
TIME_FORMAT = "H:i:s"
