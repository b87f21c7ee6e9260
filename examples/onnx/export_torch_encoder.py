"""Exports examples/onnx/torch_encoder.onnx: a 2-layer BERT-style encoder written with plain
torch.nn modules (random weights: the graph is what `dietcode import` reads), exported by
torch.onnx.export with dynamic batch_size and sequence_length, as a user would export theirs.

    python3 examples/onnx/export_torch_encoder.py [OUT.onnx]

Needs torch and onnx (pip). The shipped file was written by torch 2.5.1 (TorchScript exporter,
opset 14), see docs/onnx-import.md.
"""
import sys

import torch
from torch import nn


class SelfAttention(nn.Module):
    def __init__(self, hidden, heads):
        super().__init__()
        self.heads, self.head_dim = heads, hidden // heads
        self.query = nn.Linear(hidden, hidden)
        self.key = nn.Linear(hidden, hidden)
        self.value = nn.Linear(hidden, hidden)
        self.output = nn.Linear(hidden, hidden)

    def split(self, x):  # [batch, seq, hidden] -> [batch, heads, seq, head_dim]
        b, s, _ = x.shape
        return x.view(b, s, self.heads, self.head_dim).transpose(1, 2)

    def forward(self, x):
        q, k, v = self.split(self.query(x)), self.split(self.key(x)), self.split(self.value(x))
        scores = torch.matmul(q, k.transpose(-1, -2)) / self.head_dim**0.5
        context = torch.matmul(scores.softmax(dim=-1), v)
        b, _, s, _ = context.shape
        return self.output(context.transpose(1, 2).reshape(b, s, -1))


class EncoderLayer(nn.Module):
    def __init__(self, hidden, heads, ffn):
        super().__init__()
        self.attention = SelfAttention(hidden, heads)
        self.norm1 = nn.LayerNorm(hidden)
        self.intermediate = nn.Linear(hidden, ffn)
        self.gelu = nn.GELU()  # the Erf form
        self.out = nn.Linear(ffn, hidden)
        self.norm2 = nn.LayerNorm(hidden)

    def forward(self, x):
        x = self.norm1(x + self.attention(x))
        return self.norm2(x + self.out(self.gelu(self.intermediate(x))))


class Encoder(nn.Module):
    def __init__(self, hidden=64, heads=2, ffn=256, layers=2):
        super().__init__()
        self.layers = nn.ModuleList(EncoderLayer(hidden, heads, ffn) for _ in range(layers))

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "torch_encoder.onnx"
    torch.manual_seed(0)
    model = Encoder().eval()
    example = torch.randn(2, 16, 64)
    torch.onnx.export(
        model, (example,), out, opset_version=14,
        input_names=["hidden_states"], output_names=["last_hidden_state"],
        dynamic_axes={"hidden_states": {0: "batch_size", 1: "sequence_length"},
                      "last_hidden_state": {0: "batch_size", 1: "sequence_length"}})
    print(f"wrote {out} (torch {torch.__version__})")


if __name__ == "__main__":
    main()
