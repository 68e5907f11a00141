"""grain pipeline: determinism, exact resume, global arrays over 8 simulated devices, disjoint process shards."""
import jax
import numpy as np
import pytest
import tensorflow_datasets as tfds
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from albert_jax.data import input_pipeline as ip
from albert_jax.data import builders, fetch

tfds.display_progress_bar(False)

N = 96
SOURCE = [{"idx": i, "x": np.full(3, i, np.float32)} for i in range(N)]


def to_arrays(rec):
    return {"idx": np.int32(rec["idx"]), "x": rec["x"] * 2}


def take(it, n):
    return [jax.tree.map(np.asarray, next(it)) for _ in range(n)]


def assert_same(a, b):
    assert len(a) == len(b)
    for x, y in zip(a, b):
        assert x.keys() == y.keys()
        for k in x:
            np.testing.assert_array_equal(x[k], y[k])


def test_batches_are_deterministic_and_seeded():
    a = take(ip.make_batch_iterator(SOURCE, to_arrays, 8, seed=3), 5)
    b = take(ip.make_batch_iterator(SOURCE, to_arrays, 8, seed=3), 5)
    c = take(ip.make_batch_iterator(SOURCE, to_arrays, 8, seed=4), 5)
    assert_same(a, b)
    assert not all(np.array_equal(x["idx"], y["idx"]) for x, y in zip(a, c))
    assert a[0]["idx"].shape == (8,) and a[0]["x"].shape == (8, 3)
    np.testing.assert_array_equal(a[0]["x"][:, 0], a[0]["idx"] * 2)
    # one epoch of a shuffled source visits every record once
    epoch = take(ip.make_batch_iterator(SOURCE, to_arrays, 8, seed=3, num_epochs=1), N // 8)
    assert sorted(np.concatenate([b["idx"] for b in epoch]).tolist()) == list(range(N))


def test_state_restore_gives_exactly_the_next_batch():
    it = ip.make_batch_iterator(SOURCE, to_arrays, 8, seed=0)
    take(it, 14)  # past the first epoch boundary (12 batches per epoch)
    state = it.get_state()
    expected = take(it, 3)
    fresh = ip.make_batch_iterator(SOURCE, to_arrays, 8, seed=0)
    fresh.set_state(state)
    assert_same(take(fresh, 3), expected)


def test_global_arrays_sharded_over_8_devices():
    assert jax.device_count() == 8
    mesh = Mesh(np.array(jax.devices()).reshape(4, 2), ("data", "fsdp"))
    sharding = NamedSharding(mesh, PartitionSpec(("data", "fsdp")))
    it = ip.make_batch_iterator(SOURCE, to_arrays, 16, seed=1, sharding=sharding)
    batch = next(it)
    assert isinstance(batch["x"], jax.Array) and batch["x"].shape == (16, 3)
    assert batch["x"].sharding == sharding and batch["idx"].sharding == sharding
    shards = batch["x"].addressable_shards
    assert len(shards) == 8 and {s.data.shape for s in shards} == {(2, 3)}
    plain = next(ip.make_batch_iterator(SOURCE, to_arrays, 16, seed=1))
    np.testing.assert_array_equal(np.asarray(batch["idx"]), plain["idx"])
    with pytest.raises(ValueError, match="not divisible"):
        ip.make_batch_iterator(SOURCE, to_arrays, 12, seed=1, sharding=sharding)


def test_process_shards_are_disjoint_and_cover():
    seen = []
    for pi in range(2):
        it = ip.make_batch_iterator(SOURCE, to_arrays, 16, seed=5, num_epochs=1, process_index=pi, process_count=2)
        batches = list(it)
        assert len(batches) == N // 16 and all(b["idx"].shape == (8,) for b in batches)
        seen.append(set(np.concatenate([b["idx"] for b in batches]).tolist()))
    assert not seen[0] & seen[1]
    assert seen[0] | seen[1] == set(range(N))


def test_worker_processes_give_the_same_batches():
    a = take(ip.make_batch_iterator(SOURCE, to_arrays, 8, seed=2), 4)
    b = take(ip.make_batch_iterator(SOURCE, to_arrays, 8, seed=2, worker_count=1), 4)
    assert_same(a, b)


def test_over_a_built_tfds_source(tmp_path):
    fetch.fetch(["vader"])
    src = builders.load_source("rt_sentiment", "validation", tmp_path)

    def transform(rec):
        ids = np.frombuffer(rec["sentence"], np.uint8)[:64]
        out = np.zeros(64, np.int32)
        out[:len(ids)] = ids
        return {"ids": out, "label": np.int32(rec["label"])}

    mesh = Mesh(np.array(jax.devices()), ("data",))
    it = ip.make_batch_iterator(src, transform, 32, seed=0, sharding=NamedSharding(mesh, PartitionSpec("data")))
    take(it, 2)
    state = it.get_state()
    nxt = take(it, 1)
    again = ip.make_batch_iterator(src, transform, 32, seed=0, sharding=NamedSharding(mesh, PartitionSpec("data")))
    again.set_state(state)
    assert_same(take(again, 1), nxt)
    assert nxt[0]["ids"].shape == (32, 64) and set(np.unique(nxt[0]["label"])) <= {0, 1}


def _draw(record, rng):
    return {"idx": np.asarray(record), "draw": np.asarray(rng.integers(0, 2**31))}


def test_random_transform_redraws_every_epoch_and_resumes_exactly():
    # Dynamic masking relies on this: a record's rng differs per epoch, is reproducible, and survives a resume.
    source = list(range(6))
    it = ip.make_batch_iterator(source, global_batch_size=3, seed=7, random_transform_fn=_draw)
    batches = take(it, 6)  # three epochs of two batches
    draws = {}
    for b in batches:
        for i, d in zip(b["idx"].tolist(), b["draw"].tolist()):
            draws.setdefault(i, []).append(d)
    assert all(len(v) == 3 and len(set(v)) == 3 for v in draws.values())
    again = take(ip.make_batch_iterator(source, global_batch_size=3, seed=7, random_transform_fn=_draw), 6)
    assert_same(batches, again)
    resumed = ip.make_batch_iterator(source, global_batch_size=3, seed=7, random_transform_fn=_draw)
    first = ip.make_batch_iterator(source, global_batch_size=3, seed=7, random_transform_fn=_draw)
    take(first, 2)
    resumed.set_state(first.get_state())
    assert_same(take(resumed, 4), batches[2:])
    with pytest.raises(ValueError, match="exactly one of transform_fn and random_transform_fn"):
        ip.make_batch_iterator(source, to_arrays, 3, seed=0, random_transform_fn=_draw)


# ---------------------------------------------------------------- batched reads (the default) against grain's own
class CountingSource:
    """A real ArrayRecord source that counts how it is read."""

    def __init__(self, paths):
        import grain
        self.inner = grain.sources.ArrayRecordDataSource(paths)
        self.single = self.batched = 0

    def __len__(self):
        return len(self.inner)

    def __getitem__(self, k):
        self.single += 1
        return self.inner[k]

    def __getitems__(self, keys):
        self.batched += 1
        return self.inner.__getitems__(keys)

    def __repr__(self):
        return f"CountingSource({self.inner!r})"


def _array_record(tmp_path, n=200):
    from array_record.python.array_record_module import ArrayRecordWriter

    path = str(tmp_path / "recs.array_record")
    w = ArrayRecordWriter(path, "group_size:1")
    for i in range(n):
        w.write(np.arange(i % 7 + 1, dtype=np.int32).tobytes() + np.int32(i).tobytes())
    w.close()
    return [path]


def decode(b):
    v = np.frombuffer(b, np.int32)
    return {"idx": v[-1], "len": np.int32(len(v) - 1)}


def decode_and_draw(b, rng):
    return {**decode(b), "draw": rng.integers(1 << 30, size=2)}  # a dynamic-masking stand-in


@pytest.mark.parametrize("random", [False, True], ids=["transform", "random_transform"])
def test_batched_reads_are_grains_per_record_reads_batch_for_batch_and_state_for_state(tmp_path, random):
    paths = _array_record(tmp_path)
    kw = {"random_transform_fn": decode_and_draw} if random else {"transform_fn": decode}

    def make(batched):
        src = CountingSource(paths)
        return src, ip.make_batch_iterator(src, global_batch_size=16, seed=7, batched_reads=batched, **kw)

    (s1, one), (s2, many) = make(False), make(True)
    a, b = take(one, 15), take(many, 15)  # past the first epoch (12 batches)
    assert_same(a, b)
    assert s1.batched == 0 and s1.single == 15 * 16
    assert s2.single == 0 and s2.batched == 15  # one read a batch
    assert one.get_state() == many.get_state()
    # a state taken on either path continues on the other (runs checkpointed before batched reads resume)
    state, expected = many.get_state(), take(many, 3)
    _, other = make(False)
    other.set_state(state)
    assert_same(take(other, 3), expected)
    if random:  # each record's draw is its own: not one generator shared by the batch
        assert len({tuple(d) for d in a[0]["draw"]}) == 16
