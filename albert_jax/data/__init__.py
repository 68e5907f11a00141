"""Real corpora and labeled sets: fetch (fetch.py), parse (corpora.py), TFDS builders (builders.py)."""
