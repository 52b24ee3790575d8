"""HF transformers in PyTorch eager mode: what most RLHF code does out of the box."""

from __future__ import annotations

from rmbench.models.build import head_in_fp32, load_model, load_tokenizer
from rmbench.runtimes.base import Runtime


def torch_unavailable_reason(device: str) -> str | None:
    if device == "cpu":  # nothing to check; not imported here: a FastAPI client never needs it
        return None
    import torch

    if not torch.cuda.is_available():
        return "no CUDA device visible to torch"
    return None


# Precisions the torch runtimes take (option `precision`): bf16 runs the forward pass under
# CPU/CUDA autocast, so matmuls and linear layers take bfloat16 and the score comes back as float.
TORCH_PRECISIONS = ("fp32", "bf16")

# The reward head's precision under bf16 (option `head`): `same` as the model, or `fp32` (its
# layers outside autocast, rmbench.models.build.head_in_fp32: the score's last products in fp32).
TORCH_HEADS = ("same", "fp32")

# Kernel paths for eager's linear layers (option `kernels`): torch's own dispatch (MKL's sgemm in
# the CPU wheel), or oneDNN inner products over weights reordered once at load
# (torch.utils.mkldnn.to_mkldnn): the kernel side of the eager -> ORT gap, without graph changes.
EAGER_KERNELS = ("default", "onednn")


class HFEagerRuntime(Runtime):
    """Options: precision (fp32 | bf16, default fp32); head (same | fp32, default same; fp32 with
    bf16 only); kernels (default | onednn, CPU fp32 only)."""

    name = "hf_eager"
    studies = ("latency", "batching", "concurrency", "decomposition", "colocation")
    settings = Runtime.settings | {
        "precision": (TORCH_PRECISIONS, "fp32"),
        "head": (TORCH_HEADS, "same"),
        "kernels": (EAGER_KERNELS, "default"),
    }

    @classmethod
    def unavailable_reason(cls, device: str, options: dict | None = None) -> str | None:
        return torch_unavailable_reason(device)

    def load(self) -> None:
        import torch

        self.precision = self.choice("precision")
        self.kernels = self.choice("kernels")
        self.head = self.choice("head")
        if self.head == "fp32" and self.precision != "bf16":
            raise ValueError(
                f"{self.name}: head fp32 keeps the head out of bf16; give it with precision bf16"
            )
        if self.kernels == "onednn" and (self.device != "cpu" or self.precision != "fp32"):
            raise ValueError(
                f"{self.name}: kernels onednn is a CPU fp32 path, not {self.device} {self.precision}"
            )
        torch.set_num_threads(self.threads)
        self.torch = torch
        self.tokenizer = load_tokenizer(self.model_dir)
        self.model = load_model(self.model_dir, self.device)
        if self.head == "fp32":
            head_in_fp32(self.model)
        if self.kernels == "onednn":
            import torch.utils.mkldnn

            # nn.Linear -> MkldnnLinear: each call converts its input to oneDNN's layout and back
            self.model = torch.utils.mkldnn.to_mkldnn(self.model)

    def score(self, pairs):
        if self.torch.get_num_threads() != self.threads:
            # OpenMP's thread count is per calling thread: a service scores in worker threads.
            self.torch.set_num_threads(self.threads)
        enc = self.encode(pairs, "pt").to(self.device)
        with self.torch.inference_mode(), self.autocast():
            return self.model(**enc).logits[:, 0].float().cpu().tolist()

    def autocast(self):
        """bfloat16 autocast for precision bf16; a no-op context for fp32."""
        return self.torch.autocast(self.device, dtype=self.torch.bfloat16, enabled=self.precision == "bf16")

    def describe(self) -> dict:
        import torch

        return super().describe() | {
            "torch": torch.__version__,
            "torch_threads": torch.get_num_threads(),
            "precision": self.precision,
            "head": self.head,
            "kernels": self.kernels,
            # whether oneDNN has bf16 kernels for this CPU (else bf16 takes a slow reference path)
            "onednn_bf16": bool(torch.ops.mkldnn._is_mkldnn_bf16_supported()),
            # which BLAS / oneDNN / ISA torch dispatches to: the kernel side of the eager -> ORT gap
            "torch_config": torch.__config__.show(),
        }
