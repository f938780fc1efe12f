"""The package version, in a module of its own so any layer can read it without importing the
package root (whose lazy library exports reach up to the session layer)."""

__version__ = "0.1.0"
