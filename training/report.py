#!/usr/bin/env python3
"""The table and the plot of a set of training runs (training/train.py's
log.json files):

    python3 training/report.py RUN_DIR... [--plot curves.png] [--markdown t.md]

The table gives, per model, the parameters, the tokens seen, the final
held-out loss of each seed (nats per byte, bf16 weights, float32
evaluation), their mean and spread (half the range), and the hybrid's
difference from the softmax baseline in percent. The plot draws the
held-out loss logged during training against the tokens seen, one line per
run.
"""

import argparse
import json
import math
import os
import sys


def load(dirs):
    runs = []
    for d in dirs:
        with open(os.path.join(d, "log.json")) as f:
            runs.append(json.load(f))
    return runs


def summary(runs):
    """model -> {parameters, tokens, losses (by seed), mean, spread}."""
    out = {}
    for run in sorted(runs, key=lambda r: (r["model"], r["seed"])):
        entry = out.setdefault(run["model"], {
            "parameters": run["parameters"], "tokens": run["tokens"],
            "seconds": [], "losses": {}})
        entry["losses"][run["seed"]] = run["final_heldout_loss"]
        entry["seconds"].append(run["train_seconds"])
    for entry in out.values():
        values = list(entry["losses"].values())
        entry["mean"] = sum(values) / len(values)
        entry["spread"] = (max(values) - min(values)) / 2
    return out


def markdown(table):
    lines = ["| model | parameters | tokens | held-out loss per seed "
             "(nats/byte) | mean ± half-range | bits/byte | vs softmax |",
             "|---|---|---|---|---|---|---|"]
    base = table.get("softmax", {}).get("mean")
    for name in ("hybrid", "softmax"):
        if name not in table:
            continue
        e = table[name]
        seeds = ", ".join(f"{v:.4f} (seed {s})"
                          for s, v in sorted(e["losses"].items()))
        delta = "" if base is None or name == "softmax" else \
            f"{100 * (e['mean'] - base) / base:+.1f}%"
        lines.append(f"| {name} | {e['parameters']:,} | {e['tokens']:,} | "
                     f"{seeds} | {e['mean']:.4f} ± {e['spread']:.4f} | "
                     f"{e['mean'] / math.log(2):.3f} | {delta} |")
    return "\n".join(lines) + "\n"


def plot(runs, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(7, 4.2), dpi=120)
    colors = {"hybrid": "tab:blue", "softmax": "tab:orange"}
    styles = ["-", "--", ":", "-."]
    for run in sorted(runs, key=lambda r: (r["model"], r["seed"])):
        per_step = run["batch"] * run["seq_len"]
        steps, losses = zip(*run["heldout_loss"])
        ax.plot([s * per_step / 1e6 for s in steps], losses,
                styles[run["seed"] % len(styles)],
                color=colors.get(run["model"], "gray"),
                label=f"{run['model']} (seed {run['seed']})")
    ax.set_xlabel("training tokens (millions of bytes)")
    ax.set_ylabel("held-out loss (nats/byte)")
    ax.set_title("Nenya hybrid (GDN + MLA) vs softmax attention, "
                 "equal parameters")
    ax.grid(alpha=0.3)
    ax.legend()
    low = min(l for r in runs for _, l in r["heldout_loss"])
    ax.set_ylim(low - 0.05, low + 1.0)
    fig.tight_layout()
    fig.savefig(path)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+")
    parser.add_argument("--plot")
    parser.add_argument("--markdown")
    args = parser.parse_args(argv)
    runs = load(args.runs)
    text = markdown(summary(runs))
    print(text, end="")
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(text)
    if args.plot:
        plot(runs, args.plot)
    return 0


if __name__ == "__main__":
    sys.exit(main())
