#!/usr/bin/env python3
"""A small GPT-style language model trained on a synthetic token stream: the PyTorch workload
memshim is run against (see README.md beside this file).

The model is the usual decoder-only transformer: token and position embeddings, N pre-norm
blocks of causal self-attention and a GELU MLP, a final LayerNorm and an LM head tied to the
token embedding. The data is a stream of "words" (fixed random token sequences drawn with a
Zipf law), so the loss falls well below ln(vocab) within a few hundred steps.

stdout holds one line per optimizer step, `step N loss X` (N from 1), and one last line
`final {JSON}` that tests parse; everything else goes to stderr. With the same arguments on the
same device the output is identical on every run (deterministic algorithms are on unless
--no-deterministic). Exit status: 0, 2 on a bad command line, 3 when the device ran out of
memory (the `final` line then has "oom": true).

Pure PyTorch; no other dependency.
"""
import argparse
import json
import math
import os
import statistics
import sys
import time


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--tokens", type=int, default=1 << 20,
                   help="token budget; optimizer steps = ceil(tokens / (batch * seq-len * grad-accum))")
    p.add_argument("--steps", type=int, default=0, help="optimizer steps; overrides --tokens when > 0")
    p.add_argument("--batch", type=int, default=8, help="sequences per micro-batch")
    p.add_argument("--seq-len", type=int, default=256, help="tokens per sequence")
    p.add_argument("--grad-accum", type=int, default=1, help="micro-batches per optimizer step")
    p.add_argument("--layers", type=int, default=4, help="decoder blocks")
    p.add_argument("--hidden", type=int, default=256, help="model width")
    p.add_argument("--heads", type=int, default=4, help="attention heads (must divide --hidden)")
    p.add_argument("--vocab", type=int, default=1024, help="vocabulary size")
    p.add_argument("--lr", type=float, default=1e-3, help="AdamW learning rate")
    p.add_argument("--amp", choices=["off", "bf16"], default="off",
                   help="autocast precision (weights and optimizer state stay fp32)")
    p.add_argument("--checkpoint", action="store_true",
                   help="activation checkpointing of every block (torch.utils.checkpoint)")
    p.add_argument("--attention", choices=["math", "sdpa"], default="math",
                   help="math: explicit softmax(QK^T)V, deterministic, keeps the score matrix; "
                        "sdpa: torch.nn.functional.scaled_dot_product_attention (fused kernels)")
    p.add_argument("--freeze", type=int, default=0,
                   help="fine-tuning: freeze the embeddings and the first N blocks (no gradients, "
                        "not in the optimizer)")
    p.add_argument("--generate", type=int, default=0,
                   help="inference instead of training: each of --steps rounds prefills a prompt "
                        "of seq-len/2 tokens and decodes N tokens greedily with a KV cache "
                        "(allocated at the first round, reused by the next ones)")
    p.add_argument("--nvtx", action="store_true",
                   help="NVTX ranges: 'model init', 'step N' around each step, and inside it "
                        "'data load', 'forward', 'backward', 'optimizer'")
    p.add_argument("--echo-ranges", action="store_true",
                   help="also print every range push/pop to stderr (works on CPU too)")
    p.add_argument("--device", default="cuda", help="torch device: cuda, cuda:N or cpu")
    p.add_argument("--seed", type=int, default=1, help="seed of the data and the weights")
    p.add_argument("--no-deterministic", dest="deterministic", action="store_false",
                   help="allow nondeterministic kernels (deterministic ones are used by default)")
    a = p.parse_args(argv)
    for name in ("batch", "seq_len", "grad_accum", "layers", "hidden", "heads", "vocab", "tokens"):
        if getattr(a, name) < 1:
            p.error(f"--{name.replace('_', '-')} must be at least 1")
    if a.steps < 0:
        p.error("--steps must not be negative")
    if a.hidden % a.heads:
        p.error("--heads must divide --hidden")
    if not 0 <= a.freeze <= a.layers:
        p.error("--freeze must be between 0 and --layers")
    if a.generate < 0 or (a.generate and a.seq_len // 2 + a.generate > a.seq_len):
        p.error("--generate must be between 0 and seq-len - seq-len/2")
    return a


ARGS = parse_args(sys.argv[1:])
# cuBLAS reproducibility needs this before its first handle (PyTorch's documented recipe).
if ARGS.deterministic:
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")

import torch  # noqa: E402  (after the environment above)
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch.utils.checkpoint import checkpoint  # noqa: E402


# --- NVTX ranges ---------------------------------------------------------------------------------

class Ranges:
    """torch.cuda.nvtx push/pop, which memshim receives as an NVTX injection library. The names
    follow memshim's conventions: a range matching MEMSHIM_STEP_RANGE (default `step*`) marks a
    step and its last number is the step's number; the built-in phase rules map `*forward*` to
    activation, `*backward*` to gradient, `*optim*` to optimizer_state, `*data*load*` to input
    and `*model*init*` to parameter (shim/builtin_rules.txt)."""

    def __init__(self, enabled, echo, device):
        self.echo = echo
        self.nvtx = None
        if enabled and device.type == "cuda":
            self.nvtx = torch.cuda.nvtx
        elif enabled:
            print("train.py: --nvtx has no effect on a non-CUDA device", file=sys.stderr)
        self.depth = 0

    def push(self, name):
        if self.nvtx is not None:
            self.nvtx.range_push(name)
        if self.echo:
            print(f"range {'  ' * self.depth}push {name}", file=sys.stderr)
        self.depth += 1

    def pop(self):
        self.depth -= 1
        if self.nvtx is not None:
            self.nvtx.range_pop()
        if self.echo:
            print(f"range {'  ' * self.depth}pop", file=sys.stderr)

    def range(self, name):
        ranges = self

        class _Scope:
            def __enter__(self):
                ranges.push(name)

            def __exit__(self, *exc):
                ranges.pop()
                return False

        return _Scope()


# --- data ----------------------------------------------------------------------------------------

def make_stream(vocab, n_tokens, seed):
    """A stream of at least n_tokens tokens: words (2 to 8 random tokens each, 2048 of them)
    drawn with probability ~ 1/rank. Within a word the next token is predictable."""
    g = torch.Generator().manual_seed(seed)
    n_words, max_len = 2048, 8
    lengths = torch.randint(2, max_len + 1, (n_words,), generator=g)
    words = torch.randint(0, vocab, (n_words, max_len), generator=g)
    probs = 1.0 / torch.arange(1, n_words + 1, dtype=torch.float64)
    n_draws = n_tokens // 2 + 1  # words are at least 2 tokens long
    idx = torch.multinomial(probs, n_draws, replacement=True, generator=g)
    mask = torch.arange(max_len)[None, :] < lengths[idx][:, None]
    return words[idx][mask][: max(n_tokens, 2)].contiguous()


class Batches:
    """Random windows of the stream; the sampler has its own generator, so batches depend on
    the seed only."""

    def __init__(self, stream, batch, seq_len, seed):
        self.stream, self.batch, self.seq_len = stream, batch, seq_len
        self.g = torch.Generator().manual_seed(seed + 1)

    def next(self):
        hi = self.stream.numel() - self.seq_len - 1
        starts = torch.randint(0, hi + 1, (self.batch,), generator=self.g)
        offs = starts[:, None] + torch.arange(self.seq_len + 1)[None, :]
        w = self.stream[offs]
        return w[:, :-1], w[:, 1:]


# --- model ---------------------------------------------------------------------------------------

class KVCache:
    """Keys and values of one attention layer for --generate: [batch, heads, seq-len, head
    size] each, allocated at the first write and kept (a static cache, reused by later rounds)."""

    def __init__(self, seq_len):
        self.seq_len = seq_len
        self.k = self.v = None

    def update(self, pos, k, v):
        if self.k is None:
            shape = (k.size(0), k.size(1), self.seq_len, k.size(3))
            self.k = torch.zeros(shape, dtype=k.dtype, device=k.device)
            self.v = torch.zeros(shape, dtype=v.dtype, device=v.device)
        t = k.size(2)
        self.k[:, :, pos:pos + t] = k
        self.v[:, :, pos:pos + t] = v
        return self.k[:, :, :pos + t], self.v[:, :, :pos + t]


class SelfAttention(nn.Module):
    def __init__(self, hidden, heads, seq_len, attention):
        super().__init__()
        self.heads = heads
        self.attention = attention
        self.qkv = nn.Linear(hidden, 3 * hidden)
        self.proj = nn.Linear(hidden, hidden)
        mask = torch.ones(seq_len, seq_len, dtype=torch.bool).tril()
        self.register_buffer("causal", mask, persistent=False)

    def forward(self, x, cache=None, pos=0):
        b, t, h = x.shape
        q, k, v = self.qkv(x).split(h, dim=2)
        q, k, v = (z.view(b, t, self.heads, h // self.heads).transpose(1, 2) for z in (q, k, v))
        if cache is not None:
            k, v = cache.update(pos, k, v)
        n = k.size(2)  # keys: this chunk's t, or everything cached so far
        if self.attention == "sdpa":
            y = F.scaled_dot_product_attention(q, k, v, is_causal=n == t and t > 1)
        else:
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
            att = att.masked_fill(~self.causal[n - t:n, :n], float("-inf"))
            y = F.softmax(att, dim=-1) @ v
        return self.proj(y.transpose(1, 2).contiguous().view(b, t, h))


class Block(nn.Module):
    def __init__(self, hidden, heads, seq_len, attention):
        super().__init__()
        self.ln1 = nn.LayerNorm(hidden)
        self.attn = SelfAttention(hidden, heads, seq_len, attention)
        self.ln2 = nn.LayerNorm(hidden)
        self.mlp = nn.Sequential(nn.Linear(hidden, 4 * hidden), nn.GELU(),
                                 nn.Linear(4 * hidden, hidden))

    def forward(self, x, cache=None, pos=0):
        x = x + self.attn(self.ln1(x), cache, pos)
        return x + self.mlp(self.ln2(x))


class GPT(nn.Module):
    def __init__(self, a):
        super().__init__()
        self.tok = nn.Embedding(a.vocab, a.hidden)
        self.pos = nn.Embedding(a.seq_len, a.hidden)
        self.blocks = nn.ModuleList(Block(a.hidden, a.heads, a.seq_len, a.attention)
                                    for _ in range(a.layers))
        self.ln_f = nn.LayerNorm(a.hidden)
        self.head = nn.Linear(a.hidden, a.vocab, bias=False)
        self.head.weight = self.tok.weight  # tied
        self.use_checkpoint = a.checkpoint
        for name, p in self.named_parameters():
            if p.dim() == 2:
                nn.init.normal_(p, mean=0.0, std=0.02)
            elif name.endswith("bias"):
                nn.init.zeros_(p)

    def logits(self, idx, caches, pos):
        """Inference (--generate): the next-token logits of the last position, with caches."""
        t = idx.size(1)
        x = self.tok(idx) + self.pos(torch.arange(pos, pos + t, device=idx.device))
        for block, cache in zip(self.blocks, caches):
            x = block(x, cache, pos)
        return self.head(self.ln_f(x[:, -1:]))

    def forward(self, idx, targets):
        t = idx.size(1)
        x = self.tok(idx) + self.pos(torch.arange(t, device=idx.device))
        for block in self.blocks:
            if self.use_checkpoint and self.training:
                x = checkpoint(block, x, use_reentrant=False)
            else:
                x = block(x)
        logits = self.head(self.ln_f(x))
        return F.cross_entropy(logits.float().view(-1, logits.size(-1)), targets.reshape(-1))


# --- training ------------------------------------------------------------------------------------

def is_oom(e):
    """torch.OutOfMemoryError, or a library that could not allocate (cuBLAS creates its handle
    with its own cudaMalloc, outside PyTorch's allocator)."""
    text = str(e)
    return ("out of memory" in text.lower() or "ALLOC_FAILED" in text
            or "CUDA_ERROR_OUT_OF_MEMORY" in text or "cudaErrorMemoryAllocation" in text)


def memory_report(device):
    if device.type != "cuda":
        return {}
    r = {"max_memory_allocated": torch.cuda.max_memory_allocated(device),
         "max_memory_reserved": torch.cuda.max_memory_reserved(device),
         "memory_reserved": torch.cuda.memory_reserved(device)}
    try:
        stats = torch.cuda.memory_stats(device)
        for key in ("num_alloc_retries", "num_ooms", "segment.all.allocated", "segment.all.freed"):
            if key in stats:
                r[key.replace(".", "_")] = stats[key]
    except (RuntimeError, AssertionError):  # some allocator backends keep no statistics
        pass
    try:
        free, total = torch.cuda.mem_get_info(device)
        r["mem_get_info"] = [free, total]
    except RuntimeError:  # e.g. after an out-of-memory error that left the context unusable
        pass
    r["allocator_backend"] = getattr(torch.cuda, "get_allocator_backend", lambda: "native")()
    return r


def generate(a, model, batches, device):
    """--generate: `steps` rounds of greedy decoding; stdout `step N tokens X`, X a checksum."""
    caches = [KVCache(a.seq_len) for _ in model.blocks]
    prompt_len = a.seq_len // 2
    model.eval()
    with torch.no_grad():
        for step in range(1, a.steps + 1):
            idx = batches.next()[0][:, :prompt_len].to(device)
            out = model.logits(idx, caches, 0).argmax(-1)
            tokens = [out]
            for i in range(a.generate - 1):
                out = model.logits(out, caches, prompt_len + i).argmax(-1)
                tokens.append(out)
            total = int(torch.cat(tokens, dim=1).sum().item())
            print(f"step {step} tokens {total}", flush=True)
    return {"steps": a.steps, "generated": a.steps * a.generate * a.batch}


def freeze(a, model):
    """--freeze: the embeddings (the tied LM head with them) and the first blocks keep their
    weights; the optimizer gets the rest."""
    frozen = [model.tok, model.pos, *model.blocks[:a.freeze]] if a.freeze else []
    for m in frozen:
        m.requires_grad_(False)
    return [p for p in model.parameters() if p.requires_grad]


def main(a):
    device = torch.device(a.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        print("train.py: CUDA is not available (use --device cpu)", file=sys.stderr)
        return 2
    torch.manual_seed(a.seed)
    if a.deterministic:
        torch.use_deterministic_algorithms(True, warn_only=True)
        torch.backends.cudnn.benchmark = False
    tokens_per_step = a.batch * a.seq_len * a.grad_accum
    steps = a.steps if a.steps > 0 else -(-a.tokens // tokens_per_step)
    ranges = Ranges(a.nvtx, a.echo_ranges, device)
    autocast = torch.autocast(device_type=device.type, dtype=torch.bfloat16,
                              enabled=a.amp == "bf16")

    stream = make_stream(a.vocab, max(1 << 16, 4 * a.seq_len), a.seed)
    batches = Batches(stream, a.batch, a.seq_len, a.seed)
    with ranges.range("model init"):
        # Built on its device: the weights are initialised there, never staged in host memory.
        with device:
            model = GPT(a)
        opt = torch.optim.AdamW(freeze(a, model), lr=a.lr, betas=(0.9, 0.95), weight_decay=0.1)
    n_params = sum(p.numel() for p in model.parameters())
    print(f"train.py: {n_params} parameters, {steps} steps of {tokens_per_step} tokens, "
          f"device {device}, amp {a.amp}, checkpoint {a.checkpoint}", file=sys.stderr)

    result = {"steps": 0, "tokens": 0, "loss": None, "params": n_params, "device": str(device),
              "oom": False}
    if a.generate:
        result.update(generate(a, model, batches, device))
        result.update(memory_report(device))
        print("final " + json.dumps(result, sort_keys=True), flush=True)
        return 0
    times = []
    cpu_times = []  # process CPU time per step: what a shim adds, free of the machine's load
    status = 0
    t_start = time.perf_counter()
    try:
        for step in range(1, steps + 1):
            t0 = time.perf_counter()
            c0 = time.process_time()
            with ranges.range(f"step {step}"):
                total = 0.0
                for _ in range(a.grad_accum):
                    with ranges.range("data load"):
                        x, y = (z.to(device, non_blocking=False) for z in batches.next())
                    with ranges.range("forward"):
                        with autocast:
                            loss = model(x, y)
                    with ranges.range("backward"):
                        (loss / a.grad_accum).backward()
                    total += loss.item()
                with ranges.range("optimizer"):
                    opt.step()
                    opt.zero_grad(set_to_none=True)
            if device.type == "cuda":
                torch.cuda.synchronize(device)
            times.append(time.perf_counter() - t0)
            cpu_times.append(time.process_time() - c0)
            mean = total / a.grad_accum
            print(f"step {step} loss {mean:.9g}", flush=True)
            result.update(steps=step, tokens=step * tokens_per_step, loss=mean)
    except RuntimeError as e:  # torch.OutOfMemoryError is one
        if not is_oom(e):
            raise
        print(f"train.py: out of memory at step {result['steps'] + 1}: {str(e).splitlines()[0]}",
              file=sys.stderr)
        result["oom"] = True
        status = 3
    result["seconds"] = time.perf_counter() - t_start
    steady = times[1:] if len(times) > 1 else times
    result["step_time_median_s"] = statistics.median(steady) if steady else None
    steady_cpu = cpu_times[1:] if len(cpu_times) > 1 else cpu_times
    result["step_cpu_median_s"] = statistics.median(steady_cpu) if steady_cpu else None
    result["step_cpu_s"] = steady_cpu
    result.update(memory_report(device))
    print("final " + json.dumps(result, sort_keys=True), flush=True)
    return status


if __name__ == "__main__":
    sys.exit(main(ARGS))
