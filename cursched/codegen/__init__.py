"""Code generators: ``c/`` (C source, build, runtime wrapper) and the shared build cache."""
