"""Model math: embeddings, the scanned encoder, heads. Knows nothing of data, files or training."""
from albert_jax.modeling.heads import (AlbertForMultipleChoice, AlbertForPreTraining, AlbertForQuestionAnswering,
                                       AlbertForSequenceClassification, AlbertForSquadV2,
                                       AlbertForTokenClassification, gather_positions)
from albert_jax.modeling.model import AlbertModel

__all__ = ["AlbertModel", "AlbertForPreTraining", "AlbertForSequenceClassification", "AlbertForTokenClassification",
           "AlbertForMultipleChoice", "AlbertForQuestionAnswering", "AlbertForSquadV2", "gather_positions"]
