"""Proxy models of the ablation stage over a small real dataset version: bit-identical training,
resume, document masking, and the held-out scores (bits per byte, multiple-choice probability)."""

from __future__ import annotations

import gzip
import math

import pytest
import torch
import yaml

from tests.unit.helpers import SHARD_LIMITS, tokenized_parts
from tokenmill.ablate.evalset import Choice, read_mmlu
from tokenmill.ablate.evaluation import _log_likelihoods, bits_per_byte, choice_probability, evaluate
from tokenmill.ablate.proxy import IGNORE_INDEX, ProxySettings, build_model, build_optimizer, packed_batch, \
    parameter_count, train_proxy, training_step
from tokenmill.config import schema_settings, validate
from tokenmill.cost import ablation_cost, proxy_parameters
from tokenmill.hashing import sha256_file
from tokenmill.io import read_json
from tokenmill.shards.manifest import build_manifest, pin_tokenizer
from tokenmill.shards.writer import write_shards
from tokenmill.tokenize import load_tokenizer, token_dtype
from tokenmill.trainer.loader import Loader
from tokenmill.trainer.recipe import validate_recipe

# a proxy small enough for milliseconds a step: 12 steps of 4 x 32 tokens, a state every 4 steps
TINY = {"layers": 2, "hidden": 32, "heads": 2, "intermediate": 64, "seq_len": 32, "micro_batch": 4,
        "learning_rate": 3e-3, "warmup_steps": 2, "weight_decay": 0.1, "tokens": 12 * 4 * 32, "threads": 1,
        "checkpoint_every": 4}
SEED = 11


@pytest.fixture(scope="module")
def version(tmp_path_factory):
    """(manifest, tokenizer) of a version of two sources, de and fr (lingua text, ~38,000 tokens
    each), its tokenizer pinned as the workflow pins it."""
    tmp = tmp_path_factory.mktemp("proxy")
    tokenizer, parts, _ = tokenized_parts(tmp, ["de", "fr"], seed=5)
    vocabulary = load_tokenizer(str(tokenizer))[0].get_vocab_size()
    for part in parts:
        write_shards(part.part, "s1", [part], str(tmp / "v1" / part.part / "s1"), 30000, "Apache-2.0", "academic",
                     token_dtype(vocabulary), SHARD_LIMITS)
    manifest = tmp / "v1" / "manifest.json"
    build_manifest("v1", [str(tmp / "v1" / part.part / "s1") for part in parts], str(manifest),
                   str(tmp / "v1" / "validation.tsv"),
                   pin_tokenizer(str(tokenizer), str(tmp / "v1" / "tokenizer.json"), str(manifest)), "c" * 64, "0.1.0")
    return manifest, tmp / "v1" / "tokenizer.json"


def proxy_recipe(manifest, settings: ProxySettings, global_batch: int | None = None) -> dict:
    """One phase of the settings' seq_len and budget over both sources, global batch = micro batch."""
    return validate_recipe({
        "recipe_id": "proxy", "manifest_sha256": sha256_file(manifest),
        "tokenizer_sha256": read_json(manifest)["tokenizer"]["sha256"], "seed": 3,
        "global_batch": global_batch or settings.micro_batch,
        "phases": [{"name": "main", "tokens": settings.tokens, "seq_len": settings.seq_len,
                    "weights": {"de": 0.5, "fr": 0.5}}]})


def trained(version, tmp_path, name: str, log=None, **changes):
    manifest, _ = version
    settings = ProxySettings.from_config({**TINY, **changes})
    return train_proxy(Loader(proxy_recipe(manifest, settings), manifest), settings, SEED, tmp_path / name, log)


@pytest.fixture(scope="module")
def uninterrupted(version, tmp_path_factory):
    return trained(version, tmp_path_factory.mktemp("uninterrupted"), "state.pt")


def assert_same_run(run, other):
    (model, history), (other_model, other_history) = run, other
    assert history == other_history  # floats compared exactly
    theirs = other_model.state_dict()
    assert all(torch.equal(tensor, theirs[name]) for name, tensor in model.state_dict().items())


def test_two_runs_give_the_same_losses_and_weights_to_the_bit(version, uninterrupted, tmp_path):
    model, history = uninterrupted
    assert len(history) == 12 and all(math.isfinite(loss) for loss in history)
    assert sum(history[-4:]) < sum(history[:4])  # it learns
    assert not model.training
    assert_same_run(trained(version, tmp_path, "again.pt"), uninterrupted)


def test_a_run_killed_after_a_checkpoint_resumes_to_the_uninterrupted_run(version, uninterrupted, tmp_path):
    class Killed(Exception):
        pass

    def kill(line: str) -> None:
        raise Killed(line)

    with pytest.raises(Killed, match="step 4 of 12"):
        trained(version, tmp_path, "state.pt", log=kill)
    lines = []
    assert_same_run(trained(version, tmp_path, "state.pt", log=lines.append), uninterrupted)
    assert lines[0].endswith("resumed from " + str(tmp_path / "state.pt") + " at step 4 of 12")


def test_a_longer_budget_continues_a_finished_run_exactly(version, uninterrupted, tmp_path):
    shorter = trained(version, tmp_path, "state.pt", tokens=8 * 4 * 32)
    assert shorter[1] == uninterrupted[1][:8]
    assert_same_run(trained(version, tmp_path, "state.pt"), uninterrupted)


def test_the_state_of_another_run_is_refused(version, tmp_path):
    trained(version, tmp_path, "state.pt", tokens=4 * 4 * 32)
    with pytest.raises(ValueError, match=r"holds the state of another proxy run \(it differs in \['settings'\]\)"):
        trained(version, tmp_path, "state.pt", learning_rate=1e-3)


def test_a_recipe_of_another_batch_or_too_few_tokens_is_refused(version, tmp_path):
    manifest, _ = version
    settings = ProxySettings.from_config(TINY)
    with pytest.raises(ValueError, match="recipe 'proxy' has global_batch 2, the proxy's micro_batch is 4"):
        train_proxy(Loader(proxy_recipe(manifest, settings, global_batch=2), manifest), settings, SEED,
                    tmp_path / "state.pt")
    short = proxy_recipe(manifest, ProxySettings.from_config({**TINY, "tokens": 8 * 4 * 32}))
    with pytest.raises(ValueError, match="has 32 samples, the proxy's budget of 1536 tokens needs 48"):
        train_proxy(Loader(short, manifest), settings, SEED, tmp_path / "state.pt")
    assert not (tmp_path / "state.pt").exists()


def test_settings_name_their_bad_keys():
    schema = schema_settings(ProxySettings, "ablate.proxy")  # the literature's sizes: 1B tokens
    assert schema.steps == 1_000_000_000 // (1024 * 32)
    with pytest.raises(ValueError, match=r"unknown keys \['width'\], missing keys \['layers'\]"):
        ProxySettings.from_config({**{key: value for key, value in TINY.items() if key != "layers"}, "width": 3})
    with pytest.raises(ValueError, match="hidden: 30 is not 2 heads of an even width"):
        ProxySettings.from_config({**TINY, "hidden": 30})
    with pytest.raises(ValueError, match="tokens: 100 is less than one step of 128"):
        ProxySettings.from_config({**TINY, "tokens": 100})
    with pytest.raises(ValueError, match="layers: 1.5 is not of type int"):
        ProxySettings.from_config({**TINY, "layers": 1.5})


def test_a_token_attends_only_to_its_own_document():
    settings = ProxySettings.from_config(TINY)
    model = build_model(settings, 300, SEED).eval()
    generator = torch.Generator().manual_seed(0)
    tokens = torch.randint(1, 300, (2, 33), generator=generator).numpy()
    cu_seqlens = [[0, 10, 20, 33], [0, 33]]  # three documents in the first sample, one in the second
    batch = packed_batch(tokens, cu_seqlens)
    assert batch["position_ids"][0].tolist() == [*range(10), *range(10), *range(12)]
    assert batch["position_ids"][1].tolist() == list(range(32))
    ignored = (batch["labels"] == IGNORE_INDEX).nonzero().tolist()
    assert ignored == [[0, 9], [0, 19]]  # the labels that are a document's first token
    altered = tokens.copy()
    altered[0, :10] = (altered[0, :10] + 1) % 300  # the first document only
    with torch.no_grad():
        logits = model(**{key: batch[key] for key in ("input_ids", "attention_mask", "position_ids")}).logits
        batch = packed_batch(altered, cu_seqlens)
        changed = model(**{key: batch[key] for key in ("input_ids", "attention_mask", "position_ids")}).logits
    assert not torch.equal(logits[0, :10], changed[0, :10])
    assert torch.equal(logits[0, 10:], changed[0, 10:])
    assert torch.equal(logits[1], changed[1])


TEXT = ("Die Katze sitzt auf der Matte und schaut aus dem Fenster. Der Hund schläft im Garten unter dem "
        "Apfelbaum, und die Vögel singen. ") * 6


def test_a_model_trained_on_a_text_scores_it_in_fewer_bits_per_byte(version):
    _, tokenizer_path = version
    tokenizer = load_tokenizer(str(tokenizer_path))[0]
    settings = ProxySettings.from_config(TINY)
    vocabulary = tokenizer.get_vocab_size()
    model = build_model(settings, vocabulary, SEED)
    encoding = tokenizer.encode(TEXT, add_special_tokens=False)
    untrained = bits_per_byte(model.eval(), tokenizer, [TEXT], settings.seq_len)
    # a uniform guess costs log2(vocabulary) bits a token; an untrained model is near it
    uniform = math.log2(vocabulary) * (len(encoding.ids) - 1) / len(TEXT[encoding.offsets[1][0]:].encode())
    assert untrained == pytest.approx(uniform, rel=0.1)
    ids = torch.tensor(encoding.ids)
    windows = torch.stack([ids[start:start + settings.seq_len + 1] for start in range(0, 128, 16)])
    batch = packed_batch(windows.numpy(), [[0, settings.seq_len + 1]] * len(windows))
    optimizer = build_optimizer(model.train(), settings)
    for _ in range(150):
        training_step(model, optimizer, batch, settings.learning_rate)
    trained_bits = bits_per_byte(model.eval(), tokenizer, [TEXT], settings.seq_len)
    assert trained_bits < untrained / 3
    assert bits_per_byte(model, tokenizer, [TEXT], settings.seq_len) == trained_bits  # deterministic


ITEMS = [Choice("What does the cat sit on?", ("the mat", "the moon", "a very long and unlikely answer", "x"), 0),
         Choice("Which animal sleeps in the garden?", ("dog", "cat", "bird", "fish"), 0, "animals")]


def test_choice_probability_is_the_correct_answer_s_share_of_the_four(version):
    _, tokenizer_path = version
    tokenizer = load_tokenizer(str(tokenizer_path))[0]
    model = build_model(ProxySettings.from_config(TINY), tokenizer.get_vocab_size(), SEED).eval()
    item = ITEMS[0]
    by_answer = [choice_probability(model, tokenizer, [Choice(item.question, item.choices, answer)])
                 for answer in range(4)]
    for suffix in ("", "_per_char"):
        shares = [scores[f"choice_probability{suffix}"] for scores in by_answer]
        assert all(0 <= share <= 1 for share in shares) and sum(shares) == pytest.approx(1)
        assert sum(scores[f"choice_accuracy{suffix}"] for scores in by_answer) == 1
        assert by_answer[shares.index(max(shares))][f"choice_accuracy{suffix}"] == 1
    # the batched, padded scores are those of each answer alone
    prompt = tokenizer.encode(f"Question: {item.question}\nAnswer:", add_special_tokens=False).ids
    alone = []
    for answer in item.choices:
        continuation = tokenizer.encode(f" {answer}", add_special_tokens=False).ids
        alone += _log_likelihoods(model, [(prompt + continuation, len(continuation))])
    expected = torch.softmax(torch.tensor(alone, dtype=torch.float64), dim=0)
    assert [scores["choice_probability"] for scores in by_answer] == pytest.approx(expected.tolist(), abs=1e-6)
    both = choice_probability(model, tokenizer, ITEMS + [{"question": "q?", "choices": ["a", "b", "c", "d"],
                                                          "answer": 3}])
    assert both["items"] == 3 and 0 <= both["choice_probability"] <= 1


def test_evaluate_is_deterministic_and_says_what_it_scored(version):
    _, tokenizer_path = version
    model = build_model(ProxySettings.from_config(TINY), load_tokenizer(str(tokenizer_path))[0].get_vocab_size(), SEED)
    texts = [TEXT, "kurz", ""]
    scores = evaluate(model, tokenizer_path, texts, ITEMS, 32)
    assert scores == evaluate(model, tokenizer_path, texts, ITEMS, 32)
    assert set(scores) == {"bits_per_byte", "choice_probability", "choice_accuracy", "choice_probability_per_char",
                           "choice_accuracy_per_char", "texts", "text_bytes", "text_tokens", "items"}
    assert scores["texts"] == 3 and scores["items"] == 2 and scores["text_bytes"] > len(TEXT.encode()) - 10
    nothing = evaluate(model, tokenizer_path, [], [], 32)
    assert nothing["bits_per_byte"] is None and nothing["choice_probability"] is None


def test_read_mmlu_reads_plain_and_gzipped_csv(tmp_path):
    rows = '"What is 1, plus 1?",1,2,3,"4, or more",B\nWhy?,a,b,c,d, D \n'
    (tmp_path / "arithmetic_test.csv").write_text(rows)
    (tmp_path / "logic_test.csv.gz").write_bytes(gzip.compress(rows.encode()))
    items = read_mmlu([tmp_path / "arithmetic_test.csv", tmp_path / "logic_test.csv.gz"])
    assert items[0] == Choice("What is 1, plus 1?", ("1", "2", "3", "4, or more"), 1, "arithmetic")
    assert [(item.subject, item.answer) for item in items] == [("arithmetic", 1), ("arithmetic", 3),
                                                               ("logic", 1), ("logic", 3)]
    (tmp_path / "bad_test.csv").write_text("Why?,a,b,c,d,AB\n")
    with pytest.raises(ValueError, match="bad_test.csv: row 1 is not question, A, B, C, D, answer letter"):
        read_mmlu([tmp_path / "bad_test.csv"])


def test_the_cost_plan_counts_the_parameters_of_the_proxy_it_prices():
    for settings in (TINY, {**TINY, "layers": 3, "hidden": 48, "heads": 4, "intermediate": 96}):
        model = build_model(ProxySettings.from_config(settings), 1000, SEED)
        assert parameter_count(model) == proxy_parameters(settings, 1000)
    config = validate(yaml.safe_load(open("config/config.yaml")))
    config["ablate"] = {**config["ablate"], "thresholds": {"keep_top": [0.1, 0.2, 0.35, 0.5, 0.7]},
                        "mixtures": {**config["ablate"]["mixtures"], "count": 0},
                        "proxy": schema_settings(ProxySettings, "ablate.proxy").__dict__}
    config["tokenizer"]["vocab_size"] = 50304
    bill = ablation_cost(config)
    # the literature's default ablation: 5 thresholds x 2 seeds of ~30M-parameter proxies on 1B tokens
    assert bill["proxies"] == 10 and 25e6 < bill["parameters"] < 40e6
    assert bill["gpu_seconds"] == pytest.approx(10 * bill["tokens_per_proxy"] / bill["tokens_per_second"])
    assert ablation_cost(config, tokens_per_second=1e6)["gpu_seconds"] == pytest.approx(10 * bill["tokens_per_proxy"] / 1e6)
