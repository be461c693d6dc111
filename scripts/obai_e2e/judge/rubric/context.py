"""What the rules look at: the case, the configuration and one unit's packet."""
from __future__ import annotations

from dataclasses import dataclass

from ...config.cases import Case
from ...config.sections import Vocabulary
from ...config.target import TargetConfig
from ...drive.packet_record import Packet
from ...trace.digest import TraceDigest


@dataclass(frozen=True)
class Context:
    """The inputs of every rule for one unit."""

    case: Case
    config: TargetConfig
    packet: Packet
    digest: TraceDigest  # the first turn's curated digest
    answer: str  # the first turn's final answer (target.answer_from: stdout, or the trace's output)
    exit_code: int | None
    followup_digest: TraceDigest | None = None
    followup_answer: str | None = None

    @property
    def answer_source(self) -> str:
        return self.config.target.answer_from

    @property
    def vocab(self) -> Vocabulary:
        return self.config.vocabulary

    def expects(self, specialist: str | None) -> bool:
        return bool(specialist) and specialist in self.case.expected_tools

    @property
    def is_strategy_case(self) -> bool:
        return self.expects(self.vocab.strategy_specialist)

    @property
    def is_prediction_case(self) -> bool:
        return self.expects(self.vocab.prediction_specialist)
