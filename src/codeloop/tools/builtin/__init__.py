"""The built-in tools, one module each (imported lazily by the registry)."""
