"""Foundations every layer above builds on: key codecs, device profiles, operands and their
checks, memory, template rendering and program caching, kernel declarations and ready launch
sequences, index sizes, and the runtime faults handled on import. Imports nothing above it."""
