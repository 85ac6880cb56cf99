"""A self-contained HTML report: rebalance timeline per group and lag over time.

Plots are drawn with matplotlib and inlined as SVG, so the file opens in any browser
with no network and no companion files.
"""

from __future__ import annotations

import html
import io
from datetime import datetime
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.dates as _mdates
import matplotlib.pyplot as plt
import pandas as pd

# matplotlib.dates is untyped.
mdates: Any = _mdates

_MAX_LAG_LINES = 12


def _svg(fig: Any) -> str:
    buf = io.StringIO()
    fig.savefig(buf, format="svg", bbox_inches="tight")
    plt.close(fig)
    text = buf.getvalue()
    return text[text.index("<svg") :]


def _naive(ts: Any) -> datetime:
    t = pd.Timestamp(ts)
    out: datetime = (t.tz_convert("UTC").tz_localize(None) if t.tzinfo else t).to_pydatetime()
    return out


def rebalance_timeline(reb: pd.DataFrame, group: str) -> str:
    rows = reb[reb["group"] == group].sort_values("generation")
    fig, ax = plt.subplots(figsize=(11, 1.2 + 0.35 * max(len(rows), 1)))
    cmap = plt.get_cmap("tab20")
    for i, (_, r) in enumerate(rows.iterrows()):
        start, end = _naive(r["start"]), _naive(r["end"])
        width = max((end - start).total_seconds(), 0.001) / 86400.0
        ax.barh(i, width, left=mdates.date2num(start), color=cmap(i % 20), edgecolor="black")
        ax.text(mdates.date2num(start), i, f" gen {r['generation']}: {r['member_count']} members",
                va="center", fontsize=8)
    ax.set_yticks(range(len(rows)), [str(g) for g in rows["generation"]])
    ax.set_ylabel("generation")
    ax.xaxis_date()
    ax.xaxis.set_major_formatter(mdates.DateFormatter("%H:%M:%S"))
    ax.set_title(f"Rebalance timeline: {group}")
    ax.grid(axis="x", alpha=0.3)
    return _svg(fig)


def lag_plot(lag: pd.DataFrame, group: str) -> str:
    rows = lag[lag["group"] == group]
    fig, ax = plt.subplots(figsize=(11, 3.5))
    keys = rows[["topic", "partition"]].drop_duplicates().sort_values(["topic", "partition"])
    if len(keys) <= _MAX_LAG_LINES:
        for _, k in keys.iterrows():
            s = rows[(rows["topic"] == k["topic"]) & (rows["partition"] == k["partition"])]
            s = s.sort_values("bucket_end")
            ax.plot(mdates.date2num([_naive(t) for t in s["bucket_end"]]), s["lag"], marker=".",
                    label=f"{k['topic']}-{k['partition']}")
        ax.legend(fontsize=7, ncol=4)
    else:
        total = rows.groupby("bucket_end", as_index=False)["lag"].sum().sort_values("bucket_end")
        ax.plot(mdates.date2num([_naive(t) for t in total["bucket_end"]]), total["lag"],
                label="total lag")
        ax.legend(fontsize=7)
    ax.xaxis.set_major_formatter(mdates.DateFormatter("%H:%M:%S"))
    ax.set_ylabel("lag (messages)")
    ax.set_title(f"Consumer lag over time: {group}")
    ax.grid(alpha=0.3)
    return _svg(fig)


def _cell(v: Any) -> Any:
    if v is None:
        return ""
    if hasattr(v, "__len__") and not isinstance(v, str):
        return ", ".join(map(str, v))
    return v


def _table(df: pd.DataFrame, limit: int = 200) -> str:
    shown = df.head(limit).copy()
    for c in shown.columns:
        shown[c] = shown[c].map(_cell)
    return str(shown.to_html(index=False, border=0, classes="t", na_rep=""))


_CSS = """
body { font-family: sans-serif; margin: 24px; color: #222; background: #fff; }
h1 { color: #123; } h2 { border-bottom: 2px solid #48a; padding-bottom: 4px; }
table.t { border-collapse: collapse; font-size: 12px; margin: 8px 0 24px; }
table.t th { background: #dde8f4; } table.t td, table.t th { padding: 3px 8px;
  border: 1px solid #ccd; }
svg { max-width: 100%; height: auto; }
"""


def render(rebalances: pd.DataFrame, lag: pd.DataFrame, members: pd.DataFrame,
           title: str = "kafkalite consumer groups") -> str:
    """The report's HTML from the three jobs' outputs (as pandas frames)."""
    parts = [f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}"
             f"</title><style>{_CSS}</style></head><body><h1>{html.escape(title)}</h1>"]
    groups = sorted(set(rebalances["group"]) | set(lag["group"]) | set(members["group"]))
    parts.append(f"<p>{len(groups)} group(s); {len(rebalances)} generation(s); "
                 f"{len(members)} member id(s).</p>")
    for g in groups:
        parts.append(f"<h2>Group {html.escape(str(g))}</h2>")
        if (rebalances["group"] == g).any():
            parts.append(rebalance_timeline(rebalances, g))
            cols = ["generation", "start", "end", "duration_s", "member_count", "leader",
                    "protocol", "members_added", "members_removed"]
            parts.append(_table(rebalances[rebalances["group"] == g][cols]))
        if (lag["group"] == g).any():
            parts.append(lag_plot(lag, g))
        if (members["group"] == g).any():
            cols = ["member_id", "group_instance_id", "client_id", "first_seen", "last_seen",
                    "left_at", "generations"]
            parts.append(_table(members[members["group"] == g][cols]))
    parts.append("</body></html>")
    return "\n".join(parts)
