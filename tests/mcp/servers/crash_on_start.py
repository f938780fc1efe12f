"""A server that dies before the handshake, with a message on stderr."""

import sys

sys.stderr.write("fatal: missing configuration\n")
sys.exit(2)
