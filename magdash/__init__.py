"""magdash: geometry and noise of number representations in transformer language models."""

__version__ = "0.1.0"
