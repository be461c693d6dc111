// The specialists ("desks"): each computes its answer from the bundled data and returns
// { text, figures, status }. The hub records each call as a span of type "tool" named desk.<name>.
import { FUNDAMENTALS, QUOTES } from "./data.mjs";

export function quotes(symbol, faults) {
  if (faults.has("desk_raises")) throw new FeedDown(`quote feed for ${symbol} timed out`);
  if (faults.has("feed_error")) return { text: "", figures: {}, status: "error", detail: `no quote for ${symbol}` };
  if (faults.has("blank_body")) return { text: "", figures: {}, status: "ok" };
  const q = QUOTES[symbol];
  const sign = q.change >= 0 ? "+" : "";
  return {
    text: `${symbol} (${q.name}) closed at ${q.close.toFixed(2)} on ${q.date}, ${sign}${q.change.toFixed(2)}% on the day.`,
    figures: { close: q.close, change_pct: q.change, date: q.date },
    status: "ok",
  };
}

export function fundamentals(symbol) {
  const f = FUNDAMENTALS[symbol];
  return {
    text: `${symbol}: revenue ${f.revenue} (trailing twelve months), net margin ${f.netMargin.toFixed(1)}%, P/E ${f.pe.toFixed(1)}.`,
    figures: { revenue: f.revenue, net_margin_pct: f.netMargin, pe: f.pe },
    status: "ok",
  };
}

/** Payoff at expiry of one contract (100 shares): a naked short call, or an iron condor with 5-point wings. */
export function options(strategy, symbol, faults) {
  const spot = QUOTES[symbol].close;
  if (strategy === "naked_call") {
    const strike = Math.round(spot * 1.05);
    const premium = 4.5;
    const even = strike + premium;
    return {
      text: `Short call on ${symbol}, strike ${strike}, premium ${premium.toFixed(2)}: maximum loss unlimited; break-even ${even.toFixed(2)}.`,
      figures: { position: "naked_short_call", max_loss: faults.has("payoff_slip") ? 450 : "unlimited", breakevens: [even] },
      status: "ok",
    };
  }
  const low = Math.round(spot * 0.95);
  const high = Math.round(spot * 1.05);
  const credit = 1.2;
  const loss = Math.round((5 - credit) * 100 * 100) / 100;
  const evens = [low - credit, high + credit].map((x) => Math.round(x * 100) / 100);
  return {
    text: `Iron condor on ${symbol}, short ${low}/${high}: maximum loss ${loss.toFixed(2)}; break-evens ${evens.map((e) => e.toFixed(2)).join(" and ")}.`,
    figures: { position: "iron_condor", max_loss: loss, breakevens: evens },
    status: "ok",
  };
}

export class FeedDown extends Error {
  constructor(message) {
    super(message);
    this.name = "FeedDown";
  }
}
