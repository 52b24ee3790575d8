"""rmbench: how fast reward models score in RLHF, runtime against runtime."""

__version__ = "0.1.0"
