"""The DDP probe's workloads: what each rank trains, with synthetic data.

* ``mlp``: square Linear layers, about ``model_mib`` MiB of fp32 parameters (the published
  profiles' workload).
* ``transformer``: a decoder-only transformer shaped like GPT-2 (token and position
  embeddings, pre-LayerNorm blocks of causal self-attention and a 4x GELU MLP, a final
  LayerNorm, the output layer tied to the token embedding). ``model_mib`` picks the largest
  shape that fits: GPT-2 small (124M parameters, 475 MiB), medium (355M, 1354 MiB) or large
  (774M, 2953 MiB), or below small a scaled-down small (heads of 64 dimensions; layers and
  vocabulary scaled by heads/12, the context by its square).
* ``convnet``: a ResNet-50 (bottleneck blocks 3-4-6-3, batch norm, 1000 classes; 25.6M
  parameters, 97.5 MiB at 224 x 224) whose base width is scaled down to fit ``model_mib``,
  with the image size scaled alike.

Built from torch.nn (no torchvision, nothing downloaded). This module imports torch at the
top: import it only where torch is wanted (in a rank), not from the idle worker.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

import torch
from torch import nn

from contract.suites import TRAINING_MODELS

MIB = 1 << 20


@dataclass(frozen=True)
class TransformerShape:
    d_model: int
    heads: int
    layers: int
    vocab: int
    context: int

    def params(self) -> int:
        d = self.d_model
        # Embeddings (the output layer shares the token one), per block two LayerNorms,
        # the q/k/v and output projections and the 4x MLP, and the final LayerNorm.
        return self.vocab * d + self.context * d + self.layers * (12 * d * d + 13 * d) + 2 * d


GPT2_SMALL = TransformerShape(d_model=768, heads=12, layers=12, vocab=50257, context=1024)
GPT2_MEDIUM = TransformerShape(d_model=1024, heads=16, layers=24, vocab=50257, context=1024)
GPT2_LARGE = TransformerShape(d_model=1280, heads=20, layers=36, vocab=50257, context=1024)


def scaled_gpt2_small(heads: int) -> TransformerShape:
    """GPT-2 small with ``heads`` (1-12) heads of 64: layers and vocabulary scaled by heads/12,
    the context by its square (the tokens of a step, and so its computation, shrink with the
    model: a CPU host's quick run stays quick)."""
    scale = heads / GPT2_SMALL.heads
    return TransformerShape(d_model=64 * heads, heads=heads, layers=heads,
                            vocab=round(GPT2_SMALL.vocab * scale),
                            context=max(16, int(GPT2_SMALL.context * scale ** 2) // 8 * 8))


def transformer_shape(model_mib: int) -> TransformerShape:
    """The largest GPT-2-like shape within ``model_mib`` MiB of fp32 parameters."""
    candidates = [scaled_gpt2_small(h) for h in range(1, 12)] + [GPT2_SMALL, GPT2_MEDIUM,
                                                                   GPT2_LARGE]
    fitting = [c for c in candidates if c.params() * 4 <= model_mib * MIB]
    return fitting[-1] if fitting else candidates[0]


@dataclass(frozen=True)
class ConvShape:
    width: int  # channels of the stem; ResNet-50's is 64
    blocks: tuple[int, ...] = (3, 4, 6, 3)
    classes: int = 1000
    image: int = 224

    def params(self) -> int:
        def conv_bn(cin: int, cout: int, k: int) -> int:
            return cin * cout * k * k + 2 * cout  # no conv bias; batch norm's weight and bias

        total = conv_bn(3, self.width, 7)
        inplanes = self.width
        for stage, count in enumerate(self.blocks):
            planes = self.width * 2 ** stage
            for block in range(count):
                total += (conv_bn(inplanes, planes, 1) + conv_bn(planes, planes, 3)
                          + conv_bn(planes, planes * 4, 1))
                if block == 0:  # the projection shortcut
                    total += conv_bn(inplanes, planes * 4, 1)
                inplanes = planes * 4
        return total + inplanes * self.classes + self.classes


RESNET50 = ConvShape(width=64)


def convnet_shape(model_mib: int) -> ConvShape:
    """ResNet-50 with its width scaled down (multiples of 8) to fit ``model_mib`` MiB; the
    image shrinks with the width (224 at full width, at least 32)."""
    fitting = [w for w in range(8, RESNET50.width + 1, 8)
               if ConvShape(width=w).params() * 4 <= model_mib * MIB]
    width = fitting[-1] if fitting else 8
    image = min(RESNET50.image, max(32, round(RESNET50.image * width / RESNET50.width / 32) * 32))
    return ConvShape(width=width, image=image)


class Decoder(nn.Module):
    """GPT-2's decoder stack (pre-LayerNorm blocks, tied output layer)."""

    positions: torch.Tensor
    causal: torch.Tensor

    def __init__(self, shape: TransformerShape) -> None:
        super().__init__()
        self.wte = nn.Embedding(shape.vocab, shape.d_model)
        self.wpe = nn.Embedding(shape.context, shape.d_model)
        # GPT-2's initialisation. nn.Embedding's N(0, 1) would make the tied output layer's
        # logits so peaked that the softmax gradient is mostly denormal floats, and a CPU
        # multiplies those a hundred times slower.
        nn.init.normal_(self.wte.weight, std=0.02)
        nn.init.normal_(self.wpe.weight, std=0.02)
        block = nn.TransformerEncoderLayer(shape.d_model, shape.heads, 4 * shape.d_model,
                                           dropout=0.0, activation="gelu", batch_first=True,
                                           norm_first=True)
        self.blocks = nn.TransformerEncoder(block, shape.layers, enable_nested_tensor=False)
        self.ln_f = nn.LayerNorm(shape.d_model)
        self.register_buffer("positions", torch.arange(shape.context), persistent=False)
        self.register_buffer("causal", nn.Transformer.generate_square_subsequent_mask(
            shape.context), persistent=False)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        t = tokens.shape[1]
        x = self.wte(tokens) + self.wpe(self.positions[:t])
        x = self.blocks(x, mask=self.causal[:t, :t], is_causal=True)
        return nn.functional.linear(self.ln_f(x), self.wte.weight)  # logits over the vocabulary


class Bottleneck(nn.Module):
    """ResNet-50's block: 1x1 down, 3x3 (the stride), 1x1 up by 4, and the shortcut."""

    def __init__(self, inplanes: int, planes: int, stride: int) -> None:
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(inplanes, planes, 1, bias=False), nn.BatchNorm2d(planes), nn.ReLU(),
            nn.Conv2d(planes, planes, 3, stride=stride, padding=1, bias=False),
            nn.BatchNorm2d(planes), nn.ReLU(),
            nn.Conv2d(planes, planes * 4, 1, bias=False), nn.BatchNorm2d(planes * 4))
        self.shortcut: nn.Module = nn.Identity()
        if stride != 1 or inplanes != planes * 4:
            self.shortcut = nn.Sequential(
                nn.Conv2d(inplanes, planes * 4, 1, stride=stride, bias=False),
                nn.BatchNorm2d(planes * 4))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.body(x) + self.shortcut(x))


def resnet(shape: ConvShape) -> nn.Sequential:
    layers: list[nn.Module] = [
        nn.Conv2d(3, shape.width, 7, stride=2, padding=3, bias=False),
        nn.BatchNorm2d(shape.width), nn.ReLU(), nn.MaxPool2d(3, stride=2, padding=1)]
    inplanes = shape.width
    for stage, count in enumerate(shape.blocks):
        planes = shape.width * 2 ** stage
        for block in range(count):
            layers.append(Bottleneck(inplanes, planes, 2 if block == 0 and stage > 0 else 1))
            inplanes = planes * 4
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(inplanes, shape.classes)]
    return nn.Sequential(*layers)


def build_mlp(model_mib: int) -> tuple[nn.Sequential, int, int]:
    """An MLP of square Linear layers with about ``model_mib`` MiB of fp32 parameters."""
    params = model_mib * MIB // 4
    # About 8 layers: deep enough that DDP's bucketed all-reduce can overlap backward.
    width = max(64, int(math.sqrt(params / 8)) // 64 * 64)
    layers = max(1, round(params / (width * width + width)))
    modules: list[nn.Module] = []
    for i in range(layers):
        modules.append(nn.Linear(width, width))
        if i < layers - 1:
            modules.append(nn.ReLU())
    return nn.Sequential(*modules), width, layers


@dataclass
class Workload:
    name: str
    model: nn.Module
    inputs: torch.Tensor
    loss: Callable[[torch.Tensor], torch.Tensor]  # of the model's output on ``inputs``
    shape: dict[str, Any]

    @property
    def params(self) -> int:
        return sum(p.numel() for p in self.model.parameters())

    @property
    def gradient_bytes(self) -> int:
        """What DDP all-reduces each synced step: every trainable parameter's gradient."""
        return sum(p.numel() * p.element_size() for p in self.model.parameters()
                   if p.requires_grad)


def build(name: str, model_mib: int, batch: int, device: torch.device) -> Workload:
    """The model (on ``device``) and a batch of synthetic data for it."""
    if name == "transformer":
        tshape = transformer_shape(model_mib)
        tokens = torch.randint(tshape.vocab, (batch, tshape.context), device=device)
        targets = torch.randint(tshape.vocab, (batch * tshape.context,), device=device)
        return Workload(name, Decoder(tshape).to(device), tokens,
                        lambda logits: nn.functional.cross_entropy(
                            logits.reshape(-1, tshape.vocab), targets), asdict(tshape))
    if name == "convnet":
        cshape = convnet_shape(model_mib)
        images = torch.randn(batch, 3, cshape.image, cshape.image, device=device)
        labels = torch.randint(cshape.classes, (batch,), device=device)
        return Workload(name, resnet(cshape).to(device), images,
                        lambda logits: nn.functional.cross_entropy(logits, labels),
                        asdict(cshape))
    if name != "mlp":
        raise ValueError(f"unknown training model {name!r}; known: {', '.join(TRAINING_MODELS)}")
    model, width, layers = build_mlp(model_mib)
    x = torch.randn(batch, width, device=device)
    y = torch.randn(batch, width, device=device)
    return Workload(name, model.to(device), x, lambda out: nn.functional.mse_loss(out, y),
                    {"width": width, "layers": layers})


def ddp_buckets(ddp: Any) -> dict[str, Any]:
    """DDP's gradient buckets as its reducer holds them: count, sizes (bytes) and the cap.

    After the first backward DDP rebuilds its buckets in the order gradients became ready
    (``rebuilt_bucket_sizes``); before, the initial assignment (``bucket_sizes``). Read from
    ``_get_ddp_logging_data()`` (torch 2.x), a private API: a torch without it says so.
    """
    try:
        data = ddp._get_ddp_logging_data()
    except (AttributeError, RuntimeError) as exc:
        return {"ddp_buckets": None, "ddp_buckets_unknown": f"{type(exc).__name__}: {exc}"}
    sizes = str(data.get("rebuilt_bucket_sizes") or data.get("bucket_sizes") or "")
    bucket_bytes = [int(s) for s in sizes.split(",") if s.strip()]
    return {"ddp_buckets": len(bucket_bytes) or None, "ddp_bucket_bytes": bucket_bytes,
            "ddp_bucket_cap_bytes": int(data.get("bucket_cap_bytes") or 0) or None}
