"""Synthetic data: a causal language model rewrites source documents under prompt templates
(generator), and the outputs are measured against their sources (quality)."""
