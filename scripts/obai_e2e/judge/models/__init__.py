"""Model judges for headless runs: a configured panel asked over HTTP (httpx) or by command.

``config`` reads ``catalogs/judges.yaml``; ``keys`` keeps the judges' keys out of every
text; ``wire`` speaks the Anthropic Messages and OpenAI Chat Completions formats (the
judge's instructions as the system prompt, the packets as delimited data); ``client``
asks one judge with retries; ``budget`` keeps the per-run token and cost limit;
``cache`` stores every paid reply once; ``batches``, ``panel_record`` and ``sending``
plan, record and send a round's requests; ``ask`` asks a round's judges and stores their
answers through the blind-panel path; ``outcomes`` reads back what became of each judge,
question and the budget; ``runner`` finds or generates the run's round, asks and
aggregates.
"""
