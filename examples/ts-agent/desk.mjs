#!/usr/bin/env node
// tally-desk: a small finance assistant traced with Opik's TypeScript SDK (npm package "opik").
//
//   node desk.mjs ask [--session ID] QUESTION     one turn; prints {"answer", "session", "outcome"} as JSON
//   node desk.mjs faults                          the faults TALLY_FAULTS can switch on
//
// A turn is one trace ("tally turn", its thread the session) with a hub span "desk" over a
// guardrail "topic_gate", a "load_playbook" span and one tool span per desk asked
// ("desk.quotes", "desk.fundamentals", "desk.options"); the quotes and fundamentals desks
// run at the same time. The SDK reads OPIK_URL_OVERRIDE, OPIK_API_KEY, OPIK_WORKSPACE and
// OPIK_PROJECT_NAME; it batches its writes and sends them on flush().
// Exit codes: 0 answered, 3 refused, 2 bad usage.
import { Opik } from "opik";

import { tickers } from "./lib/data.mjs";
import * as desks from "./lib/desks.mjs";
import { FAULTS, UsageError, activeFaults } from "./lib/faults.mjs";

const REFUSAL = "I can only help with questions about markets, listed companies and options.";
const ON_TOPIC = /\b(price|trading|close[ds]?|revenue|margin|p\/e|earnings|options?|call|condor|stock|shares?)\b/i;
const PLAYBOOK = { quotes: "equities", fundamentals: "equities", options: "derivatives" };

/** Which desks a question needs, in the order the hub asks them. */
function plan(question, faults) {
  const symbol = tickers(question)[0] ?? "AAPL";
  if (/condor|naked call|sell a call/i.test(question)) {
    return [{ desk: "options", args: { strategy: /condor/i.test(question) ? "iron_condor" : "naked_call", symbol } }];
  }
  const calls = [];
  if (/price|trading|close|quote/i.test(question) || !/revenue|margin|p\/e|earnings/i.test(question)) {
    calls.push({ desk: "quotes", args: { symbol } });
  }
  if (/revenue|margin|p\/e|earnings/i.test(question) && !faults.has("skip_fundamentals")) {
    calls.push({ desk: "fundamentals", args: { symbol } });
  }
  if (faults.has("stray_desk")) calls.push({ desk: "options", args: { strategy: "naked_call", symbol } });
  return calls;
}

const pause = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** Ask one desk inside its own tool span; a desk that raises leaves errorInfo on its span. */
async function ask(hub, call, faults) {
  const span = hub.span({ name: `desk.${call.desk}`, type: "tool", input: call.args });
  await pause(5); // the desks answer over the network in a real deployment
  try {
    const { strategy, symbol } = call.args;
    const result = call.desk === "options" ? desks.options(strategy, symbol, faults) : desks[call.desk](symbol, faults);
    span.update({ output: result, endTime: new Date() });
    return result.status === "error" ? `The ${call.desk} desk could not answer: ${result.detail}.` : result.text;
  } catch (err) {
    span.update({ errorInfo: { exceptionType: err.name, message: err.message, traceback: err.stack ?? "" },
                  endTime: new Date() });
    return `The ${call.desk} desk failed: ${err.message}.`;
  }
}

async function answerQuestion(hub, question, faults) {
  const calls = plan(question, faults);
  if (!faults.has("skip_playbook")) {
    for (const playbook of new Set(calls.map((c) => PLAYBOOK[c.desk]))) {
      hub.span({ name: "load_playbook", type: "general", input: { playbook } }).update({ output: { loaded: true } }).end();
    }
  }
  let texts;
  if (faults.has("late_quotes")) {
    texts = [];
    for (const call of [...calls].reverse()) texts.unshift(await ask(hub, call, faults));
  } else {
    texts = await Promise.all(calls.map((call) => ask(hub, call, faults)));
  }
  let answer = texts.filter(Boolean).join(" ");
  if (faults.has("stray_figure")) answer += " Analysts see 12.5% upside from here.";
  return faults.has("blank_reply") ? "" : answer;
}

async function turn(client, question, session, faults) {
  const trace = client.trace({ name: "tally turn", input: { question }, threadId: session, tags: ["tally-desk"],
                               metadata: { agent: "tally-desk" } });
  const hub = trace.span({ name: "desk", type: "general", input: { question } });
  const allowed = ON_TOPIC.test(question) || faults.has("gate_leak");
  hub.span({ name: "topic_gate", type: "guardrail", input: { question } })
    .update({ output: { decision: allowed ? "allow" : "deny" } }).end();
  let answer;
  let outcome = "answered";
  if (allowed) {
    answer = await answerQuestion(hub, question, faults);
  } else {
    outcome = "refused";
    answer = faults.has("chatty_refusal") ? `${REFUSAL} For what it is worth, AAPL closed at 214.55.` : REFUSAL;
  }
  hub.update({ output: { answer } }).end();
  trace.update({ output: { answer } }).end();
  return { answer, outcome };
}

function parse(argv) {
  const [command, ...rest] = argv;
  if (command === "faults") return { command };
  if (command !== "ask") throw new UsageError("usage: desk.mjs ask [--session ID] QUESTION | desk.mjs faults");
  let session = `tally-${process.pid}-${Date.now()}`;
  const words = [];
  for (let i = 0; i < rest.length; i++) {
    if (rest[i] === "--session") session = rest[++i];
    else words.push(rest[i]);
  }
  const question = words.join(" ").trim();
  if (!question || !session) throw new UsageError("ask: give a question (and a session after --session)");
  return { command, question, session };
}

async function main(argv) {
  let args;
  let faults;
  try {
    args = parse(argv);
    faults = activeFaults();
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    process.stderr.write(`${err.message}\n`);
    return 2;
  }
  if (args.command === "faults") {
    process.stdout.write(`${JSON.stringify(FAULTS)}\n`);
    return 0;
  }
  const client = new Opik({ projectName: process.env.OPIK_PROJECT_NAME ?? "tally-desk" });
  const result = await turn(client, args.question, args.session, faults);
  if (!faults.has("no_flush")) await client.flush();
  process.stdout.write(`${JSON.stringify({ answer: result.answer, session: args.session, outcome: result.outcome })}\n`);
  return result.outcome === "refused" && !faults.has("refusal_exit_zero") ? 3 : 0;
}

// Exit at once: the SDK keeps timers of its batch queues; what was not flushed by now is lost.
process.exit(await main(process.argv.slice(2)));
