"""DeBERTa-v2/v3's disentangled attention bias as a diagonal shift, for the ONNX export.

transformers computes the content->position scores against all 2k relative-position embeddings
(k = position buckets) and then picks, for each query i and key j, the column of their distance
with `torch.gather` over an index expanded to [batch x heads, L, L]. Exported, that is an Expand
writing an int64 index the size of the attention matrix and a GatherElements reading it, twice
per layer (content->position and position->content): 6% of ONNX Runtime's time on the 4-layer
DeBERTa at 174 tokens, 11% at 400 (its profiler: Expand + GatherElements).

The score of (i, j) depends on i - j only, so the same numbers come from scoring every query
against the 2L-1 embeddings of the distances L-1 ... -(L-1) in that order, then reading row i
from column L-1-i on (a diagonal shift, Transformer-XL's "relative shift"): a Gather of 2L-1
embedding rows, a matrix product and two contiguous slices, no index the size of the attention
matrix. The score scale divides the position embeddings, which the export folds into constants,
rather than the scores. `patched()` swaps the method in for the export only; eager PyTorch runs
transformers' own code. The parity gate checks the exported file like any other (the scores
here agree with transformers' to float rounding).

ONNX's own operators still copy for each shift, transpose the second term and add the two: four
passes over attention-sized tensors per layer. `patched("disentangled_bias")` writes all of that
as one node, rmbench.DisentangledBias, which the native engine implements
(native/src/disentangled_bias.cpp). `patched("multihead_attention")` also writes the rest of the
attention (scores, mask, softmax, the values' sum) as ONNX Runtime's MultiHeadAttention.
"""

from __future__ import annotations

import math
from contextlib import contextmanager

import torch
from optimum.exporters.onnx.base import OnnxConfig
from transformers.models.deberta_v2 import modeling_deberta_v2 as deberta_v2


@torch.jit.script  # scripted so that the traced export keeps L symbolic
def distance_table(query_layer: torch.Tensor, bucket_size: int, max_position: int, span: int):
    """The embedding rows for columns m = 0 .. 2L-2, i.e. distance (L-1) - m, as transformers
    indexes them: content->position at bucket + span, position->content at span - bucket."""
    length = query_layer.size(-2)
    distance = (length - 1) - torch.arange(2 * length - 1, dtype=torch.long, device=query_layer.device)
    if bucket_size > 0 and max_position > 0:
        distance = deberta_v2.make_log_bucket_position(distance, bucket_size, max_position).to(torch.long)
    return torch.clamp(distance + span, 0, 2 * span - 1), torch.clamp(span - distance, 0, 2 * span - 1)


@torch.jit.script
def diagonal_shift(scores: torch.Tensor):
    """[N, L, 2L-1] -> [N, L, L] with out[n, i, j] = scores[n, i, L-1-i+j]: row i starts one column
    before row i-1, so the flat rows read with a stride of 2L-2 line up (L >= 2: every encoded
    pair has at least its [CLS] and [SEP])."""
    n, length, width = scores.size(0), scores.size(1), scores.size(2)
    flat = scores.reshape(n, length * width)[:, length - 1 : length - 1 + length * (width - 1)]
    return flat.reshape(n, length, width - 1)[:, :, :length]


def disentangled_attention_bias(self, query_layer, key_layer, relative_pos, rel_embeddings, scale_factor):
    """Drop-in for DisentangledSelfAttention.disentangled_attention_bias (self-attention, where
    query and key have the same length, as in every sequence-classification forward)."""
    heads, span = self.num_attention_heads, self.pos_ebd_size
    c2p_rows, p2c_rows = distance_table(query_layer, self.position_buckets, self.max_relative_positions, span)
    rel_embeddings = rel_embeddings[0 : span * 2, :].unsqueeze(0)
    if self.share_att_key:
        pos_query_proj, pos_key_proj = self.query_proj, self.key_proj
    else:
        pos_query_proj = getattr(self, "pos_query_proj", None)
        pos_key_proj = getattr(self, "pos_key_proj", None)
    length, depth = query_layer.size(-2), query_layer.size(-1)
    terms = {}
    if "c2p" in self.pos_att_type:
        pos_key = scaled_positions(
            self.transpose_for_scores(pos_key_proj(rel_embeddings), heads), scale_factor
        )
        queries = query_layer.view(-1, heads, length, depth)
        c2p = torch.matmul(queries, pos_key.index_select(1, c2p_rows).transpose(-1, -2))
        terms["c2p"] = c2p.view(-1, length, c2p.size(-1))
    if "p2c" in self.pos_att_type:
        pos_query = scaled_positions(
            self.transpose_for_scores(pos_query_proj(rel_embeddings), heads), scale_factor
        )
        keys = key_layer.view(-1, heads, length, depth)
        p2c = torch.matmul(keys, pos_query.index_select(1, p2c_rows).transpose(-1, -2))
        terms["p2c"] = p2c.view(-1, length, p2c.size(-1))
    if self._as_one_operator and len(terms) == 2:
        return DisentangledBias.apply(terms["c2p"], terms["p2c"])
    score = 0
    if "c2p" in terms:
        score += diagonal_shift(terms["c2p"])
    if "p2c" in terms:
        score += diagonal_shift(terms["p2c"]).transpose(-1, -2)
    return score


class DisentangledBias(torch.autograd.Function):
    """Both terms shifted and summed as one operator, rmbench.DisentangledBias, which the native
    engine registers (native/src/disentangled_bias.cpp): one pass instead of two diagonal-shift
    copies, a transpose and an add. PyTorch computes it with the ONNX graph's own steps, so the
    traced export and eager agree; only the exported node differs."""

    @staticmethod
    def forward(ctx, c2p: torch.Tensor, p2c: torch.Tensor) -> torch.Tensor:
        return diagonal_shift(c2p) + diagonal_shift(p2c).transpose(-1, -2)

    @staticmethod
    def symbolic(g, c2p, p2c):
        return g.op("rmbench::DisentangledBias", c2p, p2c).setType(c2p.type().with_sizes([None, None, None]))


class MultiHeadAttention(torch.autograd.Function):
    """Scores, bias, key mask, softmax and the weighted sum of values as one node: ONNX Runtime's
    own com.microsoft.MultiHeadAttention, which needs no library of ours. It takes the projections
    as [batch, length, heads x depth] and returns the context in the same layout, so the export
    also drops the value's and the context's transposes. PyTorch computes the same
    steps as transformers, so the traced export and eager agree; only the exported node differs."""

    @staticmethod
    def forward(ctx, query, key, value, keys_kept, bias, heads: int, scale: float) -> torch.Tensor:
        batch, length, width = query.shape

        def split(x: torch.Tensor) -> torch.Tensor:
            return x.view(batch, -1, heads, width // heads).transpose(1, 2)

        scores = torch.matmul(split(query), split(key).transpose(-1, -2)) * scale + bias
        scores = scores.masked_fill(keys_kept[:, None, None, :] == 0, torch.finfo(scores.dtype).min)
        context = torch.matmul(torch.softmax(scores, dim=-1), split(value))
        return context.transpose(1, 2).reshape(batch, length, width)

    @staticmethod
    def symbolic(g, query, key, value, keys_kept, bias, heads, scale):
        no_projection_bias = g.op("prim::Constant").setType(torch._C.NoneType.get())
        mask = g.op("Cast", keys_kept, to_i=torch.onnx.TensorProtoDataType.INT32)
        return g.op(
            "com.microsoft::MultiHeadAttention",
            query,
            key,
            value,
            no_projection_bias,
            mask,
            bias,
            num_heads_i=heads,
            scale_f=scale,
            mask_filter_value_f=torch.finfo(torch.float32).min,
        ).setType(query.type().with_sizes([None, None, None]))


def attention_forward(
    self,
    hidden_states,
    attention_mask,
    output_attentions=False,
    query_states=None,
    relative_pos=None,
    rel_embeddings=None,
):
    """Drop-in for DisentangledSelfAttention.forward: the position bias as one operator, then the
    rest of the attention as one MultiHeadAttention node. Its mask keeps the keys of real tokens
    for every query; transformers' also blanks a padded query's row, which changes only the
    padded positions, and no real token or the pooled first token reads those."""
    if output_attentions or not self.relative_attention or sorted(self.pos_att_type) != ["c2p", "p2c"]:
        return self._transformers_forward(
            hidden_states, attention_mask, output_attentions, query_states, relative_pos, rel_embeddings
        )
    heads = self.num_attention_heads
    query = self.query_proj(hidden_states if query_states is None else query_states)
    key, value = self.key_proj(hidden_states), self.value_proj(hidden_states)
    scale_factor = 3  # content->content plus both position terms, as transformers counts them
    bias = self.disentangled_attention_bias(
        self.transpose_for_scores(query, heads),
        self.transpose_for_scores(key, heads),
        relative_pos,
        self.pos_dropout(rel_embeddings),
        scale_factor,
    )
    length = query.size(1)
    keys_kept = attention_mask.amax(dim=-2).flatten(1)  # [batch, 1, L, L] -> [batch, L]
    scale = 1 / math.sqrt(self.attention_head_size * scale_factor)
    context = MultiHeadAttention.apply(
        query, key, value, keys_kept, bias.view(-1, heads, length, length), heads, scale
    )
    return (context, None)


def scaled_positions(projected: torch.Tensor, scale_factor: int) -> torch.Tensor:
    """The projected position embeddings [heads, 2k, d] divided by the score scale, sqrt(d x
    scale_factor): transformers divides the [L, L] scores instead. These depend on no input, so
    the export folds the division into a constant: one elementwise pass over an attention-sized
    matrix less per term and layer."""
    return projected / deberta_v2.scaled_size_sqrt(projected, scale_factor).to(dtype=projected.dtype)


# What each export swaps into transformers' attention: the shift alone, the shift and sum as the
# engine's operator, or that operator and the whole attention as ONNX Runtime's.
REWRITES = {
    "relative_shift": {"as_one_operator": False, "multihead_attention": False},
    "disentangled_bias": {"as_one_operator": True, "multihead_attention": False},
    "multihead_attention": {"as_one_operator": True, "multihead_attention": True},
}


@contextmanager
def patched(export: str = "relative_shift"):
    """transformers' DeBERTa-v2/v3 attention written as `export` (REWRITES) while the context
    lasts; transformers' own methods come back on exit, even after an error."""
    rewrite = REWRITES[export]
    attention = deberta_v2.DisentangledSelfAttention
    original_bias, original_forward = attention.disentangled_attention_bias, attention.forward
    attention.disentangled_attention_bias = disentangled_attention_bias
    attention._as_one_operator = rewrite["as_one_operator"]
    if rewrite["multihead_attention"]:
        attention._transformers_forward = original_forward
        attention.forward = attention_forward
    # optimum reloads each export in a plain ORT session to rename odd output axes; that session
    # cannot know rmbench's operator, and a classifier's logits axes are named already.
    config = OnnxConfig.fix_dynamic_axes
    if rewrite["as_one_operator"]:
        OnnxConfig.fix_dynamic_axes = lambda *args, **kwargs: None
    try:
        yield
    finally:
        OnnxConfig.fix_dynamic_axes = config
        attention.disentangled_attention_bias, attention.forward = original_bias, original_forward
        del attention._as_one_operator
        if rewrite["multihead_attention"]:
            del attention._transformers_forward
