"""Front ends (layer 8, the top): flags, print mode, stream-json, the REPL. May import every layer below."""
