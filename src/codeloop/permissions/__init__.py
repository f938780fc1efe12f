"""Permission rules, the shell scanner and the policy (layer 3, beside tools and mcp)."""
