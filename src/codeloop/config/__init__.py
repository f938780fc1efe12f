"""Configuration (layer 2, independent of providers and hooks): settings, trust, paths, feature gates;
plugins in Claude Code's format (plugins.py) and their marketplaces and installs (plugin_store.py)."""
