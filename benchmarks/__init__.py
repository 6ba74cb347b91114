"""The benchmark tool (``python -m benchmarks <command>``): see __main__.py."""
