// Faults switched on by TALLY_FAULTS (comma-separated): each makes one rubric rule trip.
export const FAULTS = {
  skip_playbook: "routing.skill_missing: no playbook is loaded",
  skip_fundamentals: "routing.specialist_missing: the fundamentals desk is not asked",
  late_quotes: "routing.sequence_violation: the quotes desk runs after the fundamentals desk",
  stray_desk: "routing.unexpected_specialist: the options desk is asked as well",
  desk_raises: "trace.error_span:desk.quotes: the quotes desk raises",
  feed_error: "specialist.quotes.tool_error: the quotes desk reports an error",
  blank_body: "specialist.quotes.empty: the quotes desk returns nothing",
  payoff_slip: "specialist.options.math: a naked call's loss comes out capped",
  gate_leak: "guardrail.leaky: the gate lets an off-topic question through",
  stray_figure: "hub.unverified_number:12.5: the answer adds a figure no desk returned",
  blank_reply: "hub.empty_response: the answer is empty",
  chatty_refusal: "guardrail.leaky_response: the refusal quotes a price",
  refusal_exit_zero: "guardrail.exit_code: a refusal exits 0",
  no_flush: "no trace: the process exits before the SDK has sent its batch",
};

/** The faults of this process; an unknown name is a usage error. */
export function activeFaults(env = process.env) {
  const names = (env.TALLY_FAULTS ?? "").split(",").map((f) => f.trim()).filter(Boolean);
  const unknown = names.filter((n) => !(n in FAULTS));
  if (unknown.length) throw new UsageError(`unknown fault(s) ${unknown.join(", ")} (known: ${Object.keys(FAULTS).join(", ")})`);
  return new Set(names);
}

export class UsageError extends Error {}
