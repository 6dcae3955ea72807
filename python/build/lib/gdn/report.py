"""The cost report of a model description (gdn-compile --emit=report):
cache bytes per sequence and token-mixing FLOPs per new token over context
lengths, per layer kind, beside the design document's softmax baseline.

    report = gdn.report.cost_report("model.json")
    gdn.report.plot(report, "costs.png")      # needs matplotlib

or from the shell: python3 -m gdn.report model.json [--plot costs.png]
[--contexts 1024,65536].
"""

import argparse
import json
import subprocess
import sys

from . import cache

__all__ = ["cost_report", "plot"]


def cost_report(description, contexts=None):
    """The report of `description` (a model .json or a checkpoint folder)
    as a dict: the JSON of gdn-compile --emit=report --format=json."""
    command = [cache.find_compiler(), str(description), "--emit=report",
               "--format=json"]
    if contexts is not None:
        command.append("--report-contexts=" + ",".join(
            str(int(t)) for t in contexts))
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        raise ValueError(result.stderr.strip())
    return json.loads(result.stdout)


def plot(report, path):
    """Cache bytes and FLOPs per token against context (log-log), per layer
    kind, the model's total and softmax attention, written to `path`."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as error:
        raise RuntimeError("plotting needs matplotlib (Debian: apt-get "
                           "install python3-matplotlib)") from error
    tokens = [c["tokens"] for c in report["contexts"]]
    kinds = [k["kind"] for k in report["layer_kinds"]]
    figure, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
    panels = [(left, "cache_bytes", "softmax_cache_bytes",
               "cache bytes per sequence"),
              (right, "flops_per_token", "softmax_flops_per_token",
               "token-mixing FLOPs per new token")]
    for axis, key, baseline, title in panels:
        for kind in kinds:
            values = [c[key][kind] for c in report["contexts"]]
            if any(values):
                axis.plot(tokens, values, marker=".", label=kind)
        axis.plot(tokens, [c[key + "_total"] for c in report["contexts"]],
                  marker="o", linewidth=2, label="model")
        axis.plot(tokens, [c[baseline] for c in report["contexts"]],
                  linestyle="--", color="black", label="softmax")
        axis.set_xscale("log", base=2)
        axis.set_yscale("log")
        axis.set_xlabel("context (tokens)")
        axis.set_title(title)
        axis.grid(True, which="both", alpha=0.3)
        axis.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python3 -m gdn.report",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("description", help="model .json or checkpoint folder")
    parser.add_argument("--contexts", help="comma-separated token counts")
    parser.add_argument("--plot", metavar="PNG", help="write a plot")
    args = parser.parse_args(argv)
    contexts = ([int(t) for t in args.contexts.split(",")]
                if args.contexts else None)
    try:
        report = cost_report(args.description, contexts)
        if args.plot:
            plot(report, args.plot)
    except (ValueError, RuntimeError) as error:
        print(f"gdn.report: error: {error}", file=sys.stderr)
        return 1
    json.dump(report, sys.stdout, indent=2)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
