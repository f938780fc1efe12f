"""A "server" that reads its stdin and never answers initialize: the connect timeout must fire."""

import sys

for _line in sys.stdin:
    pass
