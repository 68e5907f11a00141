"""albert_jax: ALBERT (A Lite BERT) in JAX/Flax."""
import os

# transformers 4.57 refuses Keras 3 wherever it would reach for TensorFlow (pipeline(), the Auto classes'
# framework guess); TensorFlow may be installed for `convert from-tf` (requirements-tf.txt), which imports TF
# directly. Our uses of transformers are all PyTorch, so keep it there unless the user says otherwise.
os.environ.setdefault("USE_TF", "0")

__version__ = "0.1.0"
