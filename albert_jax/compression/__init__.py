"""Model compression: int8 post-training quantization with qwix (quantize.py, run.py)."""
