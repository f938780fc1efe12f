"""Interactive input (layer 7): dispatch, QueryGuard, slash commands. Imports session and below, never cli."""
