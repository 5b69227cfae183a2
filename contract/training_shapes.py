"""The shapes of the DDP probe's workloads, and the computation one training step costs.

Both sides need them: the host builds its model from a shape (benchmarks/probes/
training_models.py, which imports torch), and the platform bounds a reported step time by
the FLOPs of the shape it asked for (jobs/services/consistency.py, which must not import
torch). So the shapes and their arithmetic live here, free of torch.

``train_flops`` is a lower bound on what one step computes: the multiply-adds of the
matmuls and convolutions (2 FLOPs each) in the forward, the weight gradients and the input
gradients autograd needs; nothing for normalisation, activations, the loss or the
optimizer, and causal attention counted at half its square (a kernel may skip the masked
half). A step cannot take less time than that over the fastest rate a device attains.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from contract.suites import TRAINING_MODELS

MIB = 1 << 20


@dataclass(frozen=True)
class MlpShape:
    width: int
    layers: int

    def params(self) -> int:
        return self.layers * (self.width * self.width + self.width)

    def train_flops(self, batch: int) -> float:
        forward = 2.0 * self.width * self.width * self.layers * batch
        # The input needs no gradient: the first layer's backward computes its weights' only.
        return 3 * forward - 2.0 * self.width * self.width * batch


def mlp_shape(model_mib: int) -> MlpShape:
    """Square Linear layers with about ``model_mib`` MiB of fp32 parameters."""
    params = model_mib * MIB // 4
    # About 8 layers: deep enough that DDP's bucketed all-reduce can overlap backward.
    width = max(64, int(math.sqrt(params / 8)) // 64 * 64)
    return MlpShape(width=width, layers=max(1, round(params / (width * width + width))))


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

    def train_flops(self, batch: int) -> float:
        d, t = self.d_model, self.context
        # Per token and block: q, k, v and output projections (4 d^2) and the MLP (8 d^2);
        # attention's scores and weighted sum (2 t d) at half for the causal mask; then the
        # tied output layer (vocab x d). Embedding lookups compute nothing.
        per_token = 2.0 * (self.layers * (12 * d * d + t * d) + self.vocab * d)
        return 3 * per_token * t * batch


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


def _out(size: int, kernel: int, stride: int, padding: int) -> int:
    return (size + 2 * padding - kernel) // stride + 1


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

    def train_flops(self, batch: int) -> float:
        def conv(cin: int, cout: int, k: int, size: int) -> float:
            return 2.0 * cin * cout * k * k * size * size

        size = _out(self.image, 7, 2, 3)
        stem = conv(3, self.width, 7, size)
        forward = stem
        size = _out(size, 3, 2, 1)  # the max pool
        inplanes = self.width
        for stage, count in enumerate(self.blocks):
            planes = self.width * 2 ** stage
            for block in range(count):
                stride = 2 if block == 0 and stage > 0 else 1
                down = _out(size, 3, stride, 1)
                forward += (conv(inplanes, planes, 1, size) + conv(planes, planes, 3, down)
                            + conv(planes, planes * 4, 1, down))
                if block == 0:
                    forward += conv(inplanes, planes * 4, 1, down)
                inplanes, size = planes * 4, down
        forward += 2.0 * inplanes * self.classes
        # The images need no gradient: the stem's backward computes its weights' only.
        return (3 * forward - stem) * batch


RESNET50 = ConvShape(width=64)


def convnet_shape(model_mib: int) -> ConvShape:
    """ResNet-50 with its width scaled down (multiples of 8) to fit ``model_mib`` MiB; the
    image shrinks with the width (224 at full width, at least 32)."""
    fitting = [w for w in range(8, RESNET50.width + 1, 8)
               if ConvShape(width=w).params() * 4 <= model_mib * MIB]
    width = fitting[-1] if fitting else 8
    image = min(RESNET50.image, max(32, round(RESNET50.image * width / RESNET50.width / 32) * 32))
    return ConvShape(width=width, image=image)


Shape = MlpShape | TransformerShape | ConvShape


def workload_shape(name: str, model_mib: int) -> Shape:
    """The shape the probe builds for workload ``name`` at ``model_mib`` MiB."""
    if name == "transformer":
        return transformer_shape(model_mib)
    if name == "convnet":
        return convnet_shape(model_mib)
    if name != "mlp":
        raise ValueError(f"unknown training model {name!r}; known: {', '.join(TRAINING_MODELS)}")
    return mlp_shape(model_mib)
