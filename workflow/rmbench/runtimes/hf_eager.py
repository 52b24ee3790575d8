"""HF transformers in PyTorch eager mode: what most RLHF code does out of the box."""

from __future__ import annotations

from ..models import encode, load_model, load_tokenizer
from .base import Runtime


def torch_unavailable_reason(device: str) -> str | None:
    import torch

    if device == "cuda" and not torch.cuda.is_available():
        return "no CUDA device visible to torch"
    return None


class HFEagerRuntime(Runtime):
    name = "hf_eager"

    @classmethod
    def unavailable_reason(cls, device: str) -> str | None:
        return torch_unavailable_reason(device)

    def load(self) -> None:
        import torch

        torch.set_num_threads(self.threads)
        self.torch = torch
        self.tokenizer = load_tokenizer(self.model_dir)
        self.model = load_model(self.model_dir, self.device)

    def score(self, pairs):
        if self.torch.get_num_threads() != self.threads:
            # OpenMP's thread count is per calling thread: a service scores in worker threads.
            self.torch.set_num_threads(self.threads)
        enc = encode(self.tokenizer, pairs, "pt", self.max_length).to(self.device)
        with self.torch.inference_mode():
            return self.model(**enc).logits[:, 0].float().cpu().tolist()

    def describe(self) -> dict:
        import torch

        return super().describe() | {"torch": torch.__version__, "torch_threads": torch.get_num_threads()}
