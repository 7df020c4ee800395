"""The house's own infrastructure, below every room (docs/architecture.md "Rooms"): helpers for
the database and for surviving its and Redis's failures, which every room may use and which
know nothing of the API. It imports Django and libraries only, never a room."""
