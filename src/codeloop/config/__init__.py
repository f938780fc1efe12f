"""Configuration (layer 2, independent of providers and hooks): settings, trust, paths, feature gates."""
