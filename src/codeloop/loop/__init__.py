"""The query loop of spec 004 (layer 4) and its command queue. Imports tools/permissions/mcp and
below; what it needs from above (nested memory, the context pipeline, compaction) is passed in
as capabilities (QueryParams).
"""
