"""Sessions (layer 6): Conversation, transcript and store, subagents, structured output, QueryEngine.
Imports context and below, never input or cli.
"""
