// The desk's bundled market data: every answer is computed from these figures.
export const QUOTES = {
  AAPL: { name: "Apple", close: 214.55, change: 1.12, date: "2026-06-12" },
  MSFT: { name: "Microsoft", close: 447.2, change: -0.41, date: "2026-06-12" },
  NVDA: { name: "NVIDIA", close: 131.38, change: 2.37, date: "2026-06-12" },
};

export const FUNDAMENTALS = {
  AAPL: { revenue: "391.0B", netMargin: 24.0, pe: 33.1 },
  MSFT: { revenue: "245.1B", netMargin: 35.8, pe: 36.4 },
  NVDA: { revenue: "130.5B", netMargin: 55.9, pe: 52.7 },
};

const NAMES = { apple: "AAPL", microsoft: "MSFT", nvidia: "NVDA" };

/** The tickers a question names, by symbol or company name. */
export function tickers(question) {
  const words = question.toLowerCase().match(/[a-z]+/g) ?? [];
  const found = [];
  for (const word of words) {
    const symbol = NAMES[word] ?? (QUOTES[word.toUpperCase()] ? word.toUpperCase() : null);
    if (symbol && !found.includes(symbol)) found.push(symbol);
  }
  return found;
}
