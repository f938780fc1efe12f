"""What the model sees (layer 5): system prompt, CLAUDE.md, the context pipeline, compaction.
Imports loop and below, never session.
"""
