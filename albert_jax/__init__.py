"""albert_jax: ALBERT (A Lite BERT) in JAX/Flax."""
import os

# TensorFlow may be installed for `convert from-tf` (requirements-tf.txt, with tf-keras, which transformers 4.57
# needs beside Keras 3), which imports TF directly. Our uses of transformers are all PyTorch: keep it there (and
# spare the seconds of importing TensorFlow through it) unless the user says otherwise.
os.environ.setdefault("USE_TF", "0")

__version__ = "0.1.0"
