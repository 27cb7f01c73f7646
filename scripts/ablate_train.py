"""ablate_train: one proxy of the ablation, a small LM trained on one candidate's recipe through the
loader with one seed, then measured on the evaluation set (tokenmill.ablate.proxy, .evaluation)."""

import argparse
import json
import os

import tokenmill.job  # noqa: F401  (first: see its docstring)
from tokenmill.ablate.candidates import read_candidate
from tokenmill.ablate.evaluation import evaluate
from safetensors.torch import save_model

from tokenmill.ablate.proxy import ProxySettings, parameter_count, train_proxy
from tokenmill.io import atomic_output, read_json, read_jsonl_zst, write_json
from tokenmill.trainer.loader import Loader


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--candidate", required=True, help="the candidate's folder (ablate_candidate)")
    parser.add_argument("--texts", required=True, help="the evaluation texts (ablate_evalset)")
    parser.add_argument("--choices", required=True, help="the multiple-choice items (ablate_evalset)")
    parser.add_argument("--proxy", required=True, help="the ablate.proxy config section, as JSON")
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument("--out-run", required=True, help="the run: its metrics, losses and what it trained on")
    parser.add_argument("--out-model", required=True, help="the proxy's final weights")
    args = parser.parse_args(argv)
    candidate, manifest_path = read_candidate(args.candidate)
    settings = ProxySettings.from_config(json.loads(args.proxy))
    recipe = {**candidate["recipe"], "seed": args.seed}  # the seed orders the data as well as the weights
    loader = Loader(recipe, manifest_path)
    # beside the outputs, not one of them: a rerun after a kill (--rerun-incomplete) finds it there
    state_path = f"{args.out_model}.resume"
    model, history = train_proxy(loader, settings, args.seed, state_path, log=print)
    tokenizer = manifest_path.parent / loader.manifest["tokenizer"]["path"]
    metrics = evaluate(model, tokenizer, (doc["text"] for doc in read_jsonl_zst(args.texts)), read_json(args.choices),
                       settings.seq_len)
    with atomic_output(args.out_model) as temp:
        save_model(model, str(temp))
    write_json(args.out_run, {
        "candidate": candidate["candidate"], "kind": candidate["kind"], "seed": args.seed,
        "keep_top": candidate.get("keep_top"), "weights": candidate["weights"],
        "tokens_held": sum(candidate["tokens"].values()), "parameters": parameter_count(model),
        "steps": len(history), "tokens_trained": len(history) * settings.step_tokens,
        "metrics": metrics, "losses": history})
    os.remove(state_path)
    print(json.dumps(metrics))


if __name__ == "__main__":
    main()
