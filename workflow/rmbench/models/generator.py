"""The rollout generator of the co-location study: a small causal LM that writes replies.

Built offline like the reward models: GPT-2's architecture from transformers with seeded random
weights, on a scorer's tokenizer (its vocabulary decodes the replies), written as a standard
Hugging Face folder. A launch runs it in its own process, pinned to its cores:

    python -m rmbench.models.generator --model-dir results/generator --prompts p.jsonl --new-tokens 32

Each prompt is decoded greedily for exactly --new-tokens tokens (no sampling, no early stop), so
a run's replies and its work are the same every time. It writes one JSON line per reply as soon
as it is generated ({"i", "reply", "new_tokens", "gen_s"}), then {"done": true, "wall_s",
"new_tokens"}: a consumer scores replies while the next ones are being generated. With --queue N
at most N replies wait for the consumer, which takes one by writing a line to its stdin; the
generator waits for room before it starts the next.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

from rmbench.models.families import family_of_folder


def build_generator(cfg: dict, tokenizer_dir: Path, out_dir: Path) -> None:
    """A GPT-2 model of cfg's size with seeded random weights over the tokenizer's vocabulary."""
    import torch
    from transformers import AutoTokenizer, GPT2Config, GPT2LMHeadModel

    tokenizer = AutoTokenizer.from_pretrained(str(tokenizer_dir))
    specials = {
        k: tokenizer.convert_tokens_to_ids(t)
        for k, t in family_of_folder(tokenizer_dir)["special_tokens"].items()
    }
    torch.manual_seed(cfg["seed"])
    config = GPT2Config(
        vocab_size=len(tokenizer),
        n_positions=cfg["prompt_tokens"] + cfg["new_tokens"],
        n_embd=cfg["hidden_size"],
        n_layer=cfg["layers"],
        n_head=cfg["num_attention_heads"],
        bos_token_id=specials["bos"],
        eos_token_id=specials["eos"],
        pad_token_id=specials["pad"],
    )
    model = GPT2LMHeadModel(config).eval()
    out_dir = Path(out_dir)
    model.save_pretrained(out_dir)
    tokenizer.save_pretrained(out_dir)


def pin(cores: list[int] | None) -> None:
    """This process (and the threads it starts later) on `cores` only; None leaves it as it is."""
    if cores is not None:
        os.sched_setaffinity(0, cores)


def generate(model_dir: Path, prompts: list[str], new_tokens: int, threads: int, emit, wait=None) -> dict:
    """Greedy replies of exactly `new_tokens` tokens to each prompt (its last tokens, up to what
    the model's positions leave), handed to `emit` one by one as they are made; `wait(i)`, where
    given, is called before reply i (the consumer's queue may be full)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    torch.set_num_threads(threads)
    tokenizer = AutoTokenizer.from_pretrained(str(model_dir))
    model = AutoModelForCausalLM.from_pretrained(str(model_dir)).eval()
    keep = model.config.n_positions - new_tokens
    started, total = time.perf_counter(), 0
    with torch.inference_mode():
        for i, prompt in enumerate(prompts):
            if wait is not None:
                wait(i)
            ids = tokenizer(prompt, add_special_tokens=False, return_tensors="pt")["input_ids"][:, -keep:]
            start = time.perf_counter()
            out = model.generate(
                ids,
                attention_mask=torch.ones_like(ids),
                max_new_tokens=new_tokens,
                min_new_tokens=new_tokens,
                do_sample=False,
                pad_token_id=tokenizer.pad_token_id,
            )
            reply_ids = out[0, ids.shape[1] :]
            total += len(reply_ids)
            reply = tokenizer.decode(reply_ids, skip_special_tokens=True)
            emit({"i": i, "reply": reply, "new_tokens": len(reply_ids), "gen_s": time.perf_counter() - start})
    return {"done": True, "wall_s": time.perf_counter() - started, "new_tokens": total}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model-dir", required=True)
    parser.add_argument("--prompts", required=True, help="a JSON list of prompt strings")
    parser.add_argument("--new-tokens", type=int, required=True)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--cores", help="comma-separated cores to run on (default: every one)")
    parser.add_argument(
        "--queue", type=int, default=0, help="replies not yet taken, at most (one line on stdin takes one)"
    )
    args = parser.parse_args(argv)
    pin([int(c) for c in args.cores.split(",")] if args.cores else None)
    if not Path(args.model_dir, "config.json").is_file():
        parser.error(
            f"no generator at {args.model_dir}: build it with `snakemake --cores 1 results/generator`"
        )
    prompts = json.loads(Path(args.prompts).read_text())

    def emit(line: dict) -> None:
        print(json.dumps(line), flush=True)

    taken = 0

    def wait(i: int) -> None:
        """Holds reply i back while `--queue` replies wait for the consumer."""
        nonlocal taken
        while args.queue and i - taken >= args.queue:
            if not sys.stdin.readline():
                raise SystemExit("the consumer is gone")
            taken += 1

    emit(generate(Path(args.model_dir), prompts, args.new_tokens, args.threads, emit, wait))


if __name__ == "__main__":
    sys.exit(main())
