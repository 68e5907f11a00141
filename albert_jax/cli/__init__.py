"""One small module per command; albert_jax/main.py lists them."""
