"""albert_jax.tasks.metrics: hand-worked values for the GLUE metrics and the official SQuAD v1.1/v2.0 scoring."""
import math

import numpy as np
import pytest

from albert_jax.tasks import metrics

# Shared binary case:            pos 0  1  2  3  4
P5, Y5 = [1, 1, 0, 0, 1], [1, 0, 0, 1, 1]  # tp at 0,4; fp at 1; tn at 2; fn at 3


def test_accuracy():
    assert metrics.accuracy([1, 0, 1, 1], [1, 1, 1, 0]) == 0.5  # right at 0 and 2: 2/4
    assert metrics.accuracy(np.array(["a", "b", "c"]), ["a", "a", "c"]) == pytest.approx(2 / 3)
    assert metrics.accuracy([3], [3]) == 1.0


@pytest.mark.parametrize("fn", [metrics.accuracy, metrics.f1_binary, metrics.matthews_corrcoef, metrics.pearson,
                                metrics.spearman])
def test_bad_inputs(fn):
    with pytest.raises(ValueError, match="at least"):
        fn([], [])
    with pytest.raises(ValueError, match="2 predictions but 3 labels"):
        fn([1, 0], [1, 0, 1])
    with pytest.raises(ValueError, match="1-D"):
        fn([[1, 0]], [[1, 0]])


def test_f1_binary():
    # positive=1: tp=2, fp=1, fn=1 -> 2*2 / (2*2 + 1 + 1) = 4/6
    assert metrics.f1_binary(P5, Y5) == pytest.approx(2 / 3)
    # positive=0: tp=1 (pos 2), fp=1 (pos 3), fn=1 (pos 1) -> 2 / (2 + 1 + 1) = 0.5
    assert metrics.f1_binary(P5, Y5, positive=0) == pytest.approx(0.5)
    assert metrics.f1_binary([0, 0, 0], [1, 1, 0]) == 0.0  # no true positive: 0, as sklearn's zero_division
    assert metrics.f1_binary([1, 1], [1, 1]) == 1.0


def test_matthews_binary():
    # (tp*tn - fp*fn) / sqrt((tp+fp)(tp+fn)(tn+fp)(tn+fn)) = (2*1 - 1*1) / sqrt(3*3*2*2) = 1/6
    assert metrics.matthews_corrcoef(P5, Y5) == pytest.approx(1 / 6)
    assert metrics.matthews_corrcoef([0, 1, 1, 0], [0, 1, 1, 0]) == pytest.approx(1.0)
    assert metrics.matthews_corrcoef([1, 0, 0, 1], [0, 1, 1, 0]) == pytest.approx(-1.0)
    # Undefined (a constant side makes the denominator 0): 0.0, as sklearn.
    assert metrics.matthews_corrcoef([1, 1, 1, 1], [0, 1, 1, 0]) == 0.0
    assert metrics.matthews_corrcoef([0, 1, 1, 0], [1, 1, 1, 1]) == 0.0
    assert metrics.matthews_corrcoef([2, 2], [2, 2]) == 0.0


def test_matthews_multiclass():
    # R_K = (c*n - t.q) / sqrt((n^2 - q.q)(n^2 - t.t)), t = true counts, q = predicted counts, c = correct.
    # labels 0,1,2,0,1,2 / preds 0,2,1,0,1,2: c=4, n=6, t=q=[2,2,2] -> (24-12)/sqrt(24*24) = 0.5
    assert metrics.matthews_corrcoef([0, 2, 1, 0, 1, 2], [0, 1, 2, 0, 1, 2]) == pytest.approx(0.5)
    # labels 0,0,1,2 / preds 0,1,1,1: c=2, n=4, t=[2,1,1], q=[1,3,0], t.q=5
    # -> (8-5) / sqrt((16-10)(16-6)) = 3/sqrt(60)
    assert metrics.matthews_corrcoef([0, 1, 1, 1], [0, 0, 1, 2]) == pytest.approx(3 / math.sqrt(60))
    # String labels, and a predicted class that never occurs in the labels (column only).
    assert metrics.matthews_corrcoef(["a", "b", "c"], ["a", "b", "b"]) == pytest.approx(
        # c=2, n=3, t=[1,2,0], q=[1,1,1] -> (6-3)/sqrt((9-3)(9-5)) = 3/sqrt(24)
        3 / math.sqrt(24))


def test_pearson():
    # x=[1,2,3], y=[1,2,4]: dx=[-1,0,1], dy=[-4/3,-1/3,5/3]; sum dx*dy = 3, sum dx^2 = 2, sum dy^2 = 14/3
    # r = 3 / sqrt(2 * 14/3)
    assert metrics.pearson([1, 2, 3], [1, 2, 4]) == pytest.approx(3 / math.sqrt(28 / 3))
    assert metrics.pearson([1, 2, 3], [-2, -4, -6]) == pytest.approx(-1.0)
    assert math.isnan(metrics.pearson([1, 1, 1], [1, 2, 3]))  # constant input: undefined
    with pytest.raises(ValueError, match="at least 2"):
        metrics.pearson([1.0], [2.0])


def test_spearman_with_ties():
    # ranks x=[1,2.5,2.5,4] (tie -> average rank), y=[1,3,2,4]; both mean 2.5
    # dx=[-1.5,0,0,1.5], dy=[-1.5,.5,-.5,1.5]: sum dx*dy=4.5, sum dx^2=4.5, sum dy^2=5 -> 4.5/sqrt(22.5)
    assert metrics.spearman([1, 2, 2, 3], [1, 3, 2, 4]) == pytest.approx(4.5 / math.sqrt(22.5))
    assert metrics.spearman([1, 2, 3, 4], [1, 10, 100, 1000]) == pytest.approx(1.0)  # monotone, not linear
    assert math.isnan(metrics.spearman([1, 2, 3], [5, 5, 5]))


def test_normalize_answer():
    # lower -> drop punctuation ("brown-fox" -> "brownfox") -> drop articles -> collapse spaces
    assert metrics.normalize_answer("The  Quick, brown-fox!") == "quick brownfox"
    assert metrics.normalize_answer("An apple a day") == "apple day"
    assert metrics.normalize_answer("theatre Anna") == "theatre anna"  # articles only as whole words
    assert metrics.normalize_answer(" . the ") == ""


def test_squad_exact_and_f1():
    assert metrics.squad_exact("the Eiffel Tower!", ["Eiffel tower", "Paris"]) == 1.0
    assert metrics.squad_exact("Eiffel", ["Eiffel tower"]) == 0.0
    # "the big red dog" -> [big, red, dog]; gold [red, dog, barks]: 2 common, P=R=2/3, F1=2/3; vs "cat": 0
    assert metrics.squad_f1("the big red dog", ["red dog barks", "cat"]) == pytest.approx(2 / 3)
    # repeated tokens count once per match: common=min(3,1)=1, P=1/3, R=1 -> 2*(1/3)/(4/3) = 0.5
    assert metrics.squad_f1("dog dog dog", ["dog"]) == pytest.approx(0.5)
    assert metrics.squad_f1("cat", ["dog"]) == 0.0
    # ties between gold answers: the max is taken, whichever gold gives it
    assert metrics.squad_f1("red dog", ["red cat", "big dog"]) == pytest.approx(0.5)  # P=R=1/2 either way


def test_squad_v2_semantics():
    # abstaining on no-answer is right
    assert metrics.squad_exact("", [""]) == 1.0 and metrics.squad_f1("", [""]) == 1.0
    assert metrics.squad_exact("London", [""]) == 0.0 and metrics.squad_f1("London", [""]) == 0.0
    assert metrics.squad_exact("", ["Paris"]) == 0.0 and metrics.squad_f1("", ["Paris"]) == 0.0
    assert metrics.squad_f1("the", [""]) == 1.0  # normalises to nothing: still "no answer"
    assert metrics.squad_exact("", ["the", "."]) == 1.0  # golds that normalise to nothing count as no answer
    with pytest.raises(ValueError, match=r'pass \[""\]'):
        metrics.squad_f1("x", [])
    with pytest.raises(ValueError, match="list of strings"):
        metrics.squad_exact("Paris", "Paris")


def test_squad_scores_v1():
    preds = {"q1": "Paris", "q2": "the big red dog", "q3": "", "extra": "ignored"}
    answers = {"q1": ["paris"], "q2": ["red dog barks"], "q3": ["London"]}
    out = metrics.squad_scores(preds, answers)
    # EM 1,0,0 -> 100/3; F1 1, 2/3, 0 -> 100 * (5/3) / 3
    assert out == pytest.approx({"exact_match": 100 / 3, "f1": 100 * 5 / 9, "total": 3})
    with pytest.warns(UserWarning, match="1 question.*no prediction.*'q3'"):
        missing = metrics.squad_scores({"q1": "Paris", "q2": "red dog barks"}, answers)
    assert missing["exact_match"] == pytest.approx(200 / 3) and missing["total"] == 3  # missing scores 0
    with pytest.raises(ValueError, match="no gold answers"):
        metrics.squad_scores(preds, {})


V2_ANSWERS = {"a1": ["Paris"], "a2": ["red dog barks"], "n1": [""], "n2": [""]}


def test_squad_scores_v2():
    preds = {"a1": "Paris", "a2": "big red dog", "n1": "", "n2": "London"}
    out = metrics.squad_scores(preds, V2_ANSWERS)
    # EM 1,0,1,0 -> 50; F1 1, 2/3, 1, 0 -> 100 * (8/3) / 4
    assert out["exact_match"] == pytest.approx(50.0) and out["f1"] == pytest.approx(200 / 3)
    assert out["HasAns_exact"] == pytest.approx(50.0) and out["HasAns_f1"] == pytest.approx(250 / 3)  # (1+2/3)/2
    assert out["NoAns_exact"] == pytest.approx(50.0) and out["NoAns_f1"] == pytest.approx(50.0)
    assert out["HasAns_total"] == 2 and out["NoAns_total"] == 2 and out["total"] == 4
    v1_style = metrics.squad_scores({"a1": "Paris"}, {"a1": ["Paris"]})
    assert "HasAns_exact" not in v1_style
    forced = metrics.squad_scores({"a1": "Paris"}, {"a1": ["Paris"]}, v2=True)
    assert forced["HasAns_exact"] == 100.0 and "NoAns_exact" not in forced


NON_NULL = {"a1": "Paris", "a2": "big red dog", "n1": "Rome", "n2": "London"}


def _score_at(threshold, diffs, metric):
    """Apply the decode rule (answer iff diff <= threshold) and score with squad_scores."""
    preds = {q: NON_NULL[q] if diffs[q] <= threshold else "" for q in V2_ANSWERS}
    return metrics.squad_scores(preds, V2_ANSWERS)["f1" if metric == "f1" else "exact_match"]


def test_best_null_threshold():
    diffs = {"a1": -2.0, "a2": -1.5, "n2": -1.0, "n1": 1.0}
    # All null: n1, n2 right -> 2. Then in diff order: a1 +1 -> 3 (-2.0); a2 +2/3 F1 (+0 EM) -> 3.67 (-1.5);
    # n2 -1 (it says "London") -> 2.67; n1 -1 -> 1.67.  F1 best: 3.67/4 at -1.5; EM best: 3/4 at -2.0.
    f1, t_f1 = metrics.best_null_threshold(NON_NULL, V2_ANSWERS, diffs)
    assert f1 == pytest.approx(100 * (11 / 3) / 4) and t_f1 == -1.5
    em, t_em = metrics.best_null_threshold(NON_NULL, V2_ANSWERS, diffs, metric="exact")
    assert em == pytest.approx(75.0) and t_em == -2.0  # a later equal EM does not move the threshold
    for metric, (score, t) in (("f1", (f1, t_f1)), ("exact", (em, t_em))):
        assert _score_at(t, diffs, metric) == pytest.approx(score)


def test_best_null_threshold_ties_and_all_null():
    # a1 and n2 tie at 0.0: any threshold answers both (+1 - 1 = 0 on top of 2), so 3/4 is not reachable;
    # a per-question scan (the official script) would report 75 at 0.0. Then a2, n1 at 5.0: +2/3 - 1.
    diffs = {"a1": 0.0, "n2": 0.0, "a2": 5.0, "n1": 5.0}
    score, t = metrics.best_null_threshold(NON_NULL, V2_ANSWERS, diffs)
    assert score == pytest.approx(50.0) and t == float("-inf")  # answering nothing is best
    assert _score_at(t, diffs, "f1") == pytest.approx(score)
    rng = np.random.default_rng(0)
    for _ in range(20):  # the returned score is always the one its threshold gives
        d = {q: float(rng.integers(-2, 3)) for q in V2_ANSWERS}
        for metric in ("f1", "exact"):
            s, th = metrics.best_null_threshold(NON_NULL, V2_ANSWERS, d, metric=metric)
            assert _score_at(th, d, metric) == pytest.approx(s)
            assert all(_score_at(x, d, metric) <= s + 1e-9 for x in (-3, -2, -1, 0, 1, 2))


def test_best_null_threshold_errors():
    with pytest.raises(ValueError, match="lack a prediction or a null score diff"):
        metrics.best_null_threshold(NON_NULL, V2_ANSWERS, {"a1": 0.0})
    with pytest.raises(ValueError, match="metric"):
        metrics.best_null_threshold(NON_NULL, V2_ANSWERS, dict.fromkeys(V2_ANSWERS, 0.0), metric="em")
    with pytest.raises(ValueError, match="no gold answers"):
        metrics.best_null_threshold({}, {}, {})


def test_squad_example_scores_average_to_the_official_scores():
    """The per-question scores the tables bootstrap over are exactly what squad_scores averages (as fractions)."""
    from albert_jax.tasks import metrics

    answers = {"q2": ["the cat"], "q1": ["a dog", "dogs"], "q3": ["Paris"]}
    predictions = {"q1": "dog", "q2": "the cat sat", "q3": "London"}
    per = metrics.squad_example_scores(predictions, answers)
    total = metrics.squad_scores(predictions, answers)
    # q1, q2, q3 (sorted ids): "dog" equals "a dog" once articles are dropped; "cat sat" against "cat": P 1/2, R 1
    assert per["exact_match"].tolist() == [1.0, 0.0, 0.0]
    assert per["f1"][0] == 1.0 and per["f1"][1] == pytest.approx(2 / 3) and per["f1"][2] == 0.0
    assert 100 * per["f1"].mean() == pytest.approx(total["f1"])
    assert 100 * per["exact_match"].mean() == pytest.approx(total["exact_match"])
