"""Model judges for headless runs: a configured panel asked over HTTP (httpx) or by command.

``config`` reads ``catalogs/judges.yaml``; ``wire`` speaks the Anthropic Messages and
OpenAI Chat Completions formats; ``client`` asks one judge with retries; ``budget``
keeps the per-run token and cost limit; ``cache`` stores every paid reply once;
``ask`` asks a round's judges and stores their answers through the blind-panel path;
``runner`` finds or generates the run's round, asks and aggregates.
"""
