"""Matching ONNX subgraphs: the helpers every pattern uses (match.py: structure, constants,
guards that report near-misses) and the pattern base classes (pattern.py). Each op's own patterns
live in its module, trtplugins/ops/<op>.py."""
