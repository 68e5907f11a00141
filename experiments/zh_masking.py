"""Chinese masking: characters, jieba's words or the gold words (issue 27; docs/chinese.md).
Run:
  albert-jax sweep zh_masking --scale cpu --runs runs --seeds 3
  albert-jax table zh_masking --scale cpu --runs runs
The question behind it: ERNIE and brightmart/albert_zh mask whole Chinese words; does word-level masking help a
Transformer that could learn word boundaries itself, once segmenter errors are counted? One model (the cpu family
at E=H, all-shared, ReLU as the official Chinese configs), one WordPiece vocabulary trained on People's Daily
(one token per CJK character), pretrained three ways that differ only in which characters an n-gram mask covers:
  char   every CJK character its own word (the official Chinese data code with a BERT-Chinese vocabulary)
  jieba  jieba's words (brightmart/albert_zh)
  gold   People's Daily's hand segmentation: the same idea with no segmenter error (an upper bound)
and a SentencePiece row (our earlier Chinese path) for comparison. Each is fine-tuned on zh_sentiment and pd_pos.
The held-out MLM and SOP sets are masked per character for every row (one yardstick; tasks/pretraining/input.py).

zh_few_labels: the same rows fine-tuned on a fixed 1,000 training examples of each task instead of the whole split
(finetune data.train_examples), beside random init on the same 1,000: whether this pretraining helps once labels
are scarce. Its pretraining stages are zh_masking's own: in the same --runs they are linked, not trained again.
  albert-jax sweep zh_few_labels --scale cpu --runs runs --rows char-wordpiece --seeds 3
"""
import dataclasses

from albert_jax.ablations.readings import Check
from albert_jax.ablations.registry import Experiment, Row, base_fields
from albert_jax.ablations.sweep import config_getter
from albert_jax.configs.scales import SMOKE_DOCS
from albert_jax.configs.schema import ZH_MASKING

ZH = {"data.corpus": "albert_pretrain_zh", "model.hidden_act": "relu"}
VOCAB = {"smoke": 3000, "cpu": 8000, "paper": 21128}  # People's Daily supports ~6,000 WordPiece tokens


def rows(scale):
    embedding = 128 if scale == "paper" else 768  # E=H below the paper scale (experiments/table5.py says why)
    common = dict(base_fields(scale, embedding, "all"), **ZH, **{"data.vocab_size": VOCAB[scale]})
    if scale == "smoke":  # the English smoke subset is too small for People's Daily to have a validation split
        common["data.max_docs"] = SMOKE_DOCS[ZH["data.corpus"]]
    wordpiece = [Row(f"{mode} (WordPiece)", dict(common, **{"data.tokenizer_kind": "wordpiece",
                                                             "data.zh_masking": mode}))
                 for mode in ZH_MASKING]
    return wordpiece + [Row("SentencePiece", dict(common, **{"data.tokenizer_kind": "spm"}))]


ZH_MASKING_EXPERIMENT = Experiment(
    name="zh_masking", title="Chinese masking: characters, jieba words or gold words",
    reading="source (ERNIE, brightmart/albert_zh): masking whole words beats masking characters; our sources' "
            "doubt: a strong Transformer learns word boundaries itself, and segmenter errors accumulate",
    columns=("mlm", "sop"), rows=rows, finetune=("zh_sentiment", "pd_pos"), headline="pd_pos",
    curve="eval/mlm_accuracy", reference="char (WordPiece)",
    checks=(
        Check("jieba word masking fine-tunes better than character masking on pd_pos", "ft:pd_pos",
              "jieba (WordPiece)", "char (WordPiece)", "higher"),
        Check("jieba word masking fine-tunes better than character masking on zh_sentiment", "ft:zh_sentiment",
              "jieba (WordPiece)", "char (WordPiece)", "higher"),
        Check("gold word masking fine-tunes better than character masking on pd_pos", "ft:pd_pos",
              "gold (WordPiece)", "char (WordPiece)", "higher"),
        Check("gold words beat jieba's on pd_pos (what segmenter errors cost)", "ft:pd_pos", "gold (WordPiece)",
              "jieba (WordPiece)", "higher"),
    ))
FEW_LABELS = {"smoke": 16, "cpu": 1000, "paper": 1000}  # training examples per task (smoke: a plumbing test's)
# zh_masking itself but for its fine-tuning data: the same rows (so the same pretraining stages), tasks and columns.
FEW_LABELS_EXPERIMENT = dataclasses.replace(
    ZH_MASKING_EXPERIMENT, name="zh_few_labels",
    title="Chinese pretraining with few labels: 1,000 training examples per task",
    reading="pretraining pays most where labels are few; with the whole train split our small Chinese pretraining "
            "does not beat random init (zh_masking)",
    checks=(), settings={scale: {"finetune.data.train_examples": n} for scale, n in FEW_LABELS.items()})
EXPERIMENTS = [ZH_MASKING_EXPERIMENT, FEW_LABELS_EXPERIMENT]
get_config = config_getter("zh_masking")
