"""`python -m codeloop` entry point."""

from codeloop.cli.main import main

raise SystemExit(main())
