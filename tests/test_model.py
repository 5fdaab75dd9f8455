"""The model computes the paper's block equations, and only those."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from residual_lib.run import model as model_module
from residual_lib.run.architecture import VARIANTS
from residual_lib.run.model import Block, CausalMeanMixer, GPTConfig, ResidualGPT

SMALL = dict(vocab_size=11, block_size=8, n_layer=3, n_head=2, n_embd=16)


def _ln(x, ln):
    return F.layer_norm(x, (x.shape[-1],), ln.weight, ln.bias, ln.eps)


def _attention(x, attn, n_head):
    """Causal multi-head attention written out: softmax(q k^T / sqrt(d)) v, then c_proj."""
    B, T, C = x.shape
    qkv = x @ attn.c_attn.weight.T + attn.c_attn.bias
    q, k, v = (t.reshape(B, T, n_head, C // n_head).transpose(1, 2) for t in qkv.split(C, dim=-1))
    scores = q @ k.transpose(-1, -2) / math.sqrt(C // n_head)
    scores = scores.masked_fill(torch.ones(T, T).triu(1).bool(), float("-inf"))
    y = (scores.softmax(-1) @ v).transpose(1, 2).reshape(B, T, C)
    return y @ attn.c_proj.weight.T + attn.c_proj.bias


def _mlp(x, mlp):
    h = F.gelu(x @ mlp.c_fc.weight.T + mlp.c_fc.bias)
    return h @ mlp.c_proj.weight.T + mlp.c_proj.bias


def _randomize(module):
    torch.manual_seed(0)
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(torch.randn_like(p) * 0.3)


@pytest.mark.parametrize("gain", [1.0, 2.0])
@pytest.mark.parametrize("variant", ["full", "attn_only", "ffn_only", "no_residual"])
def test_block_computes_the_variant_equations(variant, gain):
    config = GPTConfig.for_variant(variant, gain=gain, **SMALL)
    block = Block(config).eval()
    _randomize(block)
    x = torch.randn(2, 8, 16)
    a = _attention(_ln(x, block.ln_1), block.attn, config.n_head)
    if gain != 1.0:
        a = gain * a
    h = x + a if variant in ("full", "attn_only") else a
    f = _mlp(_ln(h, block.ln_2), block.mlp)
    if gain != 1.0:
        f = gain * f
    y = h + f if variant in ("full", "ffn_only") else f
    torch.testing.assert_close(block(x), y, rtol=1e-5, atol=1e-5)


def test_variants_set_the_flags_the_paper_names():
    assert VARIANTS["attn_only"][:2] == (True, False)  # FFN residual removed
    assert VARIANTS["ffn_only"][:2] == (False, True)  # attention residual removed
    blocks = {v: Block(GPTConfig.for_variant(v, **SMALL)) for v in ("full", "no_residual")}
    assert blocks["full"].attn_residual and blocks["full"].ffn_residual
    assert not (blocks["no_residual"].attn_residual or blocks["no_residual"].ffn_residual)


def test_unknown_variant_is_rejected():
    with pytest.raises(ValueError, match="choose one of"):
        GPTConfig.for_variant("nonsense")


def test_full_model_matches_a_plain_gpt2_forward():
    torch.manual_seed(1)
    model = ResidualGPT(GPTConfig.for_variant("full", **SMALL)).eval()
    _randomize(model)
    idx = torch.randint(0, 11, (3, 8))
    sd = model.state_dict()
    # GPT-2: x = wte[idx] + wpe[pos]; x += attn(ln1(x)); x += mlp(ln2(x)); logits = ln_f(x) @ wte^T
    x = sd["transformer.wte.weight"][idx] + sd["transformer.wpe.weight"][:8]
    for block in model.transformer.h:
        x = x + _attention(_ln(x, block.ln_1), block.attn, 2)
        x = x + _mlp(_ln(x, block.ln_2), block.mlp)
    logits = _ln(x, model.transformer.ln_f) @ sd["transformer.wte.weight"].T
    torch.testing.assert_close(model(idx)[0], logits, rtol=1e-5, atol=1e-5)


def test_lm_head_is_tied_and_residual_projections_use_scaled_init():
    torch.manual_seed(0)
    config = GPTConfig.for_variant("full", vocab_size=50, block_size=16, n_layer=8, n_head=4, n_embd=128)
    model = ResidualGPT(config)
    assert model.lm_head.weight is model.transformer.wte.weight
    proj = torch.cat([b.mlp.c_proj.weight.flatten() for b in model.transformer.h])
    fc = torch.cat([b.mlp.c_fc.weight.flatten() for b in model.transformer.h])
    assert proj.std().item() == pytest.approx(0.02 / math.sqrt(16), rel=0.05)
    assert fc.std().item() == pytest.approx(0.02, rel=0.05)


def test_gain_one_is_identical_to_no_gain():
    torch.manual_seed(0)
    plain = ResidualGPT(GPTConfig.for_variant("attn_only", **SMALL)).eval()
    torch.manual_seed(0)
    gained = ResidualGPT(GPTConfig.for_variant("attn_only", gain=1.0, **SMALL)).eval()
    idx = torch.randint(0, 11, (2, 8))
    assert torch.equal(plain(idx)[0], gained(idx)[0])
    torch.manual_seed(0)
    doubled = ResidualGPT(GPTConfig.for_variant("attn_only", gain=2.0, **SMALL)).eval()
    assert not torch.allclose(plain(idx)[0], doubled(idx)[0])


def test_attention_probs_reproduce_the_sdpa_output():
    block = Block(GPTConfig.for_variant("full", **SMALL)).eval()
    _randomize(block)
    x = _ln(torch.randn(2, 8, 16), block.ln_1)
    probs = block.attn.attention_probs(x)
    assert probs.shape == (2, 2, 8, 8)
    torch.testing.assert_close(probs.sum(-1), torch.ones(2, 2, 8))
    assert probs.triu(1).abs().max() == 0  # causal
    _, _, v = block.attn._qkv(x)
    y = (probs @ v).transpose(1, 2).reshape(2, 8, 16)
    torch.testing.assert_close(block.attn.c_proj(y), block.attn(x), rtol=1e-5, atol=1e-5)


def test_mixer_never_calls_attention(monkeypatch):
    def forbidden(*args, **kwargs):
        raise AssertionError("the mixer variant called scaled_dot_product_attention")

    monkeypatch.setattr(model_module.F, "scaled_dot_product_attention", forbidden)
    model = ResidualGPT(GPTConfig.for_variant("mixer", **SMALL))
    assert all(isinstance(b.attn, CausalMeanMixer) for b in model.transformer.h)
    _, loss = model(torch.randint(0, 11, (2, 8)), torch.randint(0, 11, (2, 8)))
    loss.backward()
    with pytest.raises(AssertionError):
        ResidualGPT(GPTConfig.for_variant("attn_only", **SMALL))(torch.randint(0, 11, (2, 8)))


def test_mixer_is_position_blind_and_causal():
    mixer = CausalMeanMixer(GPTConfig(**SMALL)).eval()
    _randomize(mixer)
    x = torch.randn(1, 8, 16)
    out = mixer(x)
    t = 5
    # permuting the tokens at or before t leaves the output at t unchanged ...
    perm = torch.cat([torch.randperm(t + 1), torch.arange(t + 1, 8)])
    torch.testing.assert_close(mixer(x[:, perm])[:, t], out[:, t], rtol=1e-5, atol=1e-5)
    # ... which attention does not satisfy: it sees which token sits at t
    attn = Block(GPTConfig(**SMALL)).attn.eval()
    _randomize(attn)
    assert not torch.allclose(attn(x[:, perm])[:, t], attn(x)[:, t], atol=1e-4)
    # the future is never read
    y = x.clone()
    y[:, t + 1 :] = torch.randn(1, 8 - t - 1, 16)
    torch.testing.assert_close(mixer(y)[:, : t + 1], out[:, : t + 1])
    # and its diagonal mass is fixed at 1/t (t counted from 1)
    diag = mixer.attention_probs(x).diagonal(dim1=-2, dim2=-1)[0, 0]
    torch.testing.assert_close(diag, 1.0 / torch.arange(1, 9, dtype=torch.float32))


def test_return_hidden_gives_embedding_then_every_block_output():
    model = ResidualGPT(GPTConfig.for_variant("no_residual", **SMALL)).eval()
    idx = torch.randint(0, 11, (2, 8))
    logits, loss, hidden = model(idx, return_hidden=True)
    assert loss is None and len(hidden) == SMALL["n_layer"] + 1
    torch.testing.assert_close(model.transformer.h[0](hidden[0]), hidden[1])
    torch.testing.assert_close(model.lm_head(model.transformer.ln_f(hidden[-1])), logits)
