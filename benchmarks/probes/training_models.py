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

Built from torch.nn (no torchvision, nothing downloaded), to the shapes of
contract/training_shapes.py (which the platform reads too, without torch). This module
imports torch at the top: import it only where torch is wanted (in a rank), not from the
idle worker.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

import torch
from torch import nn

from contract.suites import TRAINING_MODELS
from contract.training_shapes import ConvShape, TransformerShape, convnet_shape, mlp_shape, transformer_shape


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
    mlp = mlp_shape(model_mib)
    width, layers = mlp.width, mlp.layers
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
