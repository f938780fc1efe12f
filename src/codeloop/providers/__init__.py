"""Model providers (layer 2, independent of config and hooks): Anthropic SSE, OpenAI-compatible,
retries, the model table and prices.
"""
