"""Model math: embeddings, the scanned encoder, heads. Knows nothing of data, files or training."""
from albert_jax.modeling.heads import (AlbertForEarlyExit, AlbertForMultipleChoice, AlbertForPreTraining,
                                       AlbertForQuestionAnswering, AlbertForSequenceClassification,
                                       AlbertForSquadV2, AlbertForTokenClassification, gather_positions)
from albert_jax.modeling.model import AlbertModel

__all__ = ["AlbertModel", "AlbertForPreTraining", "AlbertForSequenceClassification", "AlbertForTokenClassification",
           "AlbertForMultipleChoice", "AlbertForQuestionAnswering", "AlbertForSquadV2", "AlbertForEarlyExit",
           "gather_positions"]
