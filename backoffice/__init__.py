"""The back office's own room, below every room with an admin (docs/architecture.md "Rooms"):
the toolkit their admin pages share (`backoffice.toolkit`) and the registry through which a
higher room adds to a lower room's page (`backoffice.extensions`). Django only, never a room."""
