"""albert_jax: ALBERT (A Lite BERT) in JAX/Flax."""

__version__ = "0.1.0"
