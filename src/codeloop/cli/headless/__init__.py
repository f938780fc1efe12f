"""The headless front ends: print mode (-p), the stream-json session and the SDK control protocol."""
