"""gdn-compile --emit=report against the cost formulas, computed here from
the model descriptions alone: cache bytes per sequence (f32 caches) and
token-mixing FLOPs per new token over context lengths, beside the design
document's softmax baseline (2 L t d_model elements, 4 L t d_model FLOPs).
No weights are needed."""

import json
import pathlib
import subprocess

import pytest

from gdn import cache
from model_configs import hybrid_config

REPO = pathlib.Path(__file__).resolve().parents[2]
FIXTURES = REPO / "test" / "fixtures"
CONTEXTS = [1, 37, 1024, 65536, 1 << 20]


def _report(path, *args):
    result = subprocess.run(
        [cache.find_compiler(), str(path), "--emit=report", "--format=json",
         "--report-contexts=" + ",".join(map(str, CONTEXTS)), *args],
        capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def _nenya_kinds(config):
    layers = config["num_layers"]
    return ["mla" if i % 4 == 0 or i == layers - 1 else "gdn"
            for i in range(layers)]


def _expected_nenya(config, tokens):
    """(cache elements, FLOPs) per layer kind at `tokens` of context."""
    g, m, d = config["gdn"], config["mla"], config["d_model"]
    h, dh, conv = g["num_heads"], g["head_dim"], g["conv_size"]
    r, rope = m["kv_lora_rank"], m["qk_rope_head_dim"]
    return {
        "gdn": (h * dh * dh + (conv - 1) * 3 * h * dh, 7 * h * dh * dh),
        "mla": ((r + rope) * tokens,
                m["num_heads"] * (2 * m["qk_nope_head_dim"] * r
                                  + 2 * r * m["v_head_dim"]
                                  + tokens * (4 * r + 2 * rope))),
    }


def _expected_qwen(text, tokens):
    hv, dk, dv = (text["linear_num_value_heads"], text["linear_key_head_dim"],
                  text["linear_value_head_dim"])
    hk = text["linear_num_key_heads"]
    channels = 2 * hk * dk + hv * dv
    heads, kv, hd = (text["num_attention_heads"],
                     text["num_key_value_heads"], text["head_dim"])
    return {
        "qwen_gdn": (hv * dk * dv
                     + (text["linear_conv_kernel_dim"] - 1) * channels,
                     7 * hv * dk * dv),
        "attention": (2 * kv * hd * tokens, 4 * heads * hd * tokens),
    }


def _check(report, kinds, expected_at, num_layers, d_model):
    assert report["num_layers"] == num_layers
    assert report["d_model"] == d_model
    counts = {k: kinds.count(k) for k in set(kinds)}
    assert {k["kind"]: k["layers"] for k in report["layer_kinds"]} == counts
    for context in report["contexts"]:
        t = context["tokens"]
        expected = expected_at(t)
        total_bytes = total_flops = 0
        for kind, count in counts.items():
            elements, flops = expected[kind]
            assert context["cache_bytes"][kind] == 4 * count * elements, (kind, t)
            assert context["flops_per_token"][kind] == count * flops, (kind, t)
            total_bytes += 4 * count * elements
            total_flops += count * flops
        assert context["cache_bytes_total"] == total_bytes
        assert context["flops_per_token_total"] == total_flops
        assert context["softmax_cache_bytes"] == 4 * 2 * num_layers * t * d_model
        assert context["softmax_flops_per_token"] == 4 * num_layers * t * d_model
    assert [c["tokens"] for c in report["contexts"]] == CONTEXTS


@pytest.mark.parametrize("num_layers,kv_lora_rank",
                         [(5, 16), (9, 24), (1, 16)])
def test_nenya_report_matches_formulas(tmp_path, num_layers, kv_lora_rank):
    config = hybrid_config(num_layers=num_layers)
    config["mla"]["kv_lora_rank"] = kv_lora_rank
    path = tmp_path / "model.json"
    path.write_text(json.dumps(config))
    report = _report(path)
    _check(report, _nenya_kinds(config),
           lambda t: _expected_nenya(config, t), num_layers, config["d_model"])
    # MLA against softmax attention's 2 d_model per token and layer.
    rope = config["mla"]["qk_rope_head_dim"]
    assert report["mla_compression"] == pytest.approx(
        2 * config["d_model"] / (kv_lora_rank + rope))


def test_bundled_model_compression_is_the_design_documents():
    """The bundled Nenya example keeps about the ~5.5x the design document
    quotes for its MLA layers."""
    bundled = REPO / "examples" / "nenya-tiny" / "model.json"
    report = _report(bundled)
    assert 5.0 < report["mla_compression"] < 6.0


@pytest.mark.parametrize("name", ["qwen3_5", "qwen3_5_text", "qwen3_next"])
def test_checkpoint_report_matches_formulas(name):
    config = json.loads((FIXTURES / "huggingface" / name /
                         "config.json").read_text())
    text = config.get("text_config", config)
    kinds = ["qwen_gdn" if kind == "linear_attention" else "attention"
             for kind in text["layer_types"]]
    report = _report(FIXTURES / "huggingface" / name)
    _check(report, kinds, lambda t: _expected_qwen(text, t),
           text["num_hidden_layers"], text["hidden_size"])
    assert "mla_compression" not in report


def test_report_needs_no_weights_and_prints_tables(tmp_path):
    path = tmp_path / "model.json"
    path.write_text(json.dumps(hybrid_config()))
    result = subprocess.run([cache.find_compiler(), str(path),
                             "--emit=report"], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    for line in ("cache bytes per sequence:", "token-mixing FLOPs per new "
                 "token:", "MLA compression: 2.67x", "  1M"):
        assert line in result.stdout
    summary = subprocess.run([cache.find_compiler(), str(path),
                              "--emit=summary"], capture_output=True, text=True)
    assert summary.returncode == 0, summary.stderr
    assert "weights: none at" in summary.stdout
    assert "5 layers (3 GDN, 2 MLA)" in summary.stdout


def test_bad_contexts_are_refused(tmp_path):
    path = tmp_path / "model.json"
    path.write_text(json.dumps(hybrid_config()))
    result = subprocess.run([cache.find_compiler(), str(path),
                             "--emit=report", "--report-contexts=0"],
                            capture_output=True, text=True)
    assert result.returncode == 1
    assert "--report-contexts: 0 is not a context length" in result.stderr


def test_python_report_and_plot(tmp_path):
    from gdn import report
    path = tmp_path / "model.json"
    path.write_text(json.dumps(hybrid_config()))
    costs = report.cost_report(path, contexts=[64, 4096])
    assert [c["tokens"] for c in costs["contexts"]] == [64, 4096]
    with pytest.raises(ValueError, match="report-contexts"):
        report.cost_report(path, contexts=[0])
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        with pytest.raises(RuntimeError, match="matplotlib"):
            report.plot(costs, tmp_path / "costs.png")
        return
    report.plot(costs, tmp_path / "costs.png")
    assert (tmp_path / "costs.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
