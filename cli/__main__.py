"""``python -m kraftspec`` runs the command line."""

from kraftspec.cli import main

raise SystemExit(main())
