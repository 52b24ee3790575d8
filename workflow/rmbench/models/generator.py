"""The rollout generator of the co-location study: a small causal LM that writes replies.

Built offline like the reward models: GPT-2's architecture from transformers with seeded random
weights, on a scorer's tokenizer (its vocabulary decodes the replies), written as a standard
Hugging Face folder. A launch runs it in its own process, pinned to its cores:

    python -m rmbench.models.generator --model-dir results/generator --prompts p.jsonl --new-tokens 32

Each prompt is decoded greedily for exactly --new-tokens tokens (no sampling, no early stop), so
a run's replies and its work are the same every time. Once loaded and warmed up on the first
prompt, it writes {"ready": true} and waits. Each pass starts when the consumer writes a `go`
line: it writes one JSON line per reply as soon as it is generated ({"i", "reply", "new_tokens",
"gen_s"}), then {"done": true, "wall_s", "new_tokens"}. A consumer scores replies while the next
ones are being generated. With --queue N at most N replies wait for the consumer, which takes one
by writing a line to its stdin; the generator waits for room before it starts the next. With
--passes N the same process runs N passes, so that the passes a launch compares pay neither the
process's start nor the model's load.
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


class Replier:
    """The loaded generator: greedy replies of exactly `new_tokens` tokens to each prompt (its last
    tokens, up to what the model's positions leave)."""

    def __init__(self, model_dir: Path, new_tokens: int, threads: int):
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        torch.set_num_threads(threads)
        self.torch = torch
        self.tokenizer = AutoTokenizer.from_pretrained(str(model_dir))
        self.model = AutoModelForCausalLM.from_pretrained(str(model_dir)).eval()
        self.new_tokens = new_tokens
        self.keep = self.model.config.n_positions - new_tokens

    def reply(self, prompt: str) -> tuple[str, int]:
        """The reply and its token count."""
        ids = self.tokenizer(prompt, add_special_tokens=False, return_tensors="pt")["input_ids"][
            :, -self.keep :
        ]
        with self.torch.inference_mode():
            out = self.model.generate(
                ids,
                attention_mask=self.torch.ones_like(ids),
                max_new_tokens=self.new_tokens,
                min_new_tokens=self.new_tokens,
                do_sample=False,
                pad_token_id=self.tokenizer.pad_token_id,
            )
        reply_ids = out[0, ids.shape[1] :]
        return self.tokenizer.decode(reply_ids, skip_special_tokens=True), len(reply_ids)

    def run(self, prompts: list[str], emit, wait=None) -> dict:
        """One pass over the prompts, each reply handed to `emit` as it is made; `wait(i)`, where
        given, is called before reply i (the consumer's queue may be full)."""
        started, total = time.perf_counter(), 0
        for i, prompt in enumerate(prompts):
            if wait is not None:
                wait(i)
            start = time.perf_counter()
            reply, tokens = self.reply(prompt)
            total += tokens
            emit({"i": i, "reply": reply, "new_tokens": tokens, "gen_s": time.perf_counter() - start})
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
    parser.add_argument("--passes", type=int, default=1, help="passes over the prompts, each started by `go`")
    args = parser.parse_args(argv)
    pin([int(c) for c in args.cores.split(",")] if args.cores else None)
    if not Path(args.model_dir, "config.json").is_file():
        parser.error(
            f"no generator at {args.model_dir}: build it with `snakemake --cores 1 results/generator`"
        )
    prompts = json.loads(Path(args.prompts).read_text())

    def emit(line: dict) -> None:
        print(json.dumps(line), flush=True)

    def line() -> str:
        read = sys.stdin.readline()
        if not read:
            raise SystemExit("the consumer is gone")
        return read.strip()

    taken = 0

    def wait(i: int) -> None:
        """Holds reply i back while `--queue` replies wait for the consumer."""
        nonlocal taken
        while args.queue and i - taken >= args.queue:
            line()
            taken += 1

    replier = Replier(Path(args.model_dir), args.new_tokens, args.threads)
    replier.reply(prompts[0])  # the first call's one-time costs, before any pass is timed
    emit({"ready": True})
    for _ in range(args.passes):
        while line() != "go":
            pass  # the last pass's takes that its queue never needed
        taken = 0
        emit(replier.run(prompts, emit, wait))


if __name__ == "__main__":
    sys.exit(main())
